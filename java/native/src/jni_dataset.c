/* JNI glue of the Java API (org.lancehost.Native): dataset. See jni_common.c. */
#include "jni_common.h"

/* ---- datasets ---------------------------------------------------------------------------- */

JNIEXPORT jlong JNI(datasetOpen)(JNIEnv *env, jclass c, jstring uri, jobjectArray options, jlong version,
                                 jlong timestamp_us, jboolean at_timestamp) {
  (void)c;
  int ok = 1;
  char *u = utf8(env, uri, "uri", &ok);
  if (!ok) return 0;
  StrArray o;
  if (!str_array(env, options, "storage options", 0, &o)) {
    free(u);
    return 0;
  }
  LanceDataset *d = at_timestamp
      ? lance_dataset_open_at_timestamp_us(u, (const char *const *)o.items, (int64_t)timestamp_us)
      : lance_dataset_open(u, (const char *const *)o.items, (uint64_t)version);
  if (!d) throw_last(env);
  free(u);
  str_array_free(&o);
  return (jlong)(intptr_t)d;
}

JNIEXPORT jlong JNI(snapshotOpen)(JNIEnv *env, jclass c, jbyteArray token, jobjectArray options) {
  (void)c;
  StrArray o;
  if (!str_array(env, options, "storage options", 0, &o)) return 0;
  jsize n = (*env)->GetArrayLength(env, token);
  jbyte *p = (*env)->GetByteArrayElements(env, token, NULL);
  if (!p) {
    str_array_free(&o);
    return 0;
  }
  LanceDataset *d = lance_snapshot_open((const uint8_t *)p, (size_t)n, (const char *const *)o.items);
  (*env)->ReleaseByteArrayElements(env, token, p, JNI_ABORT);
  str_array_free(&o);
  if (!d) throw_last(env);
  return (jlong)(intptr_t)d;
}

JNIEXPORT jlong JNI(splitOpenDataset)(JNIEnv *env, jclass c, jbyteArray split, jobjectArray options) {
  (void)c;
  StrArray o;
  if (!str_array(env, options, "storage options", 0, &o)) return 0;
  LanceSplit *s = split_in(env, split);
  LanceDataset *d = NULL;
  if (s) {
    d = lance_split_open_dataset(s, (const char *const *)o.items);
    if (!d) throw_last(env);
    lance_split_free(s);
  }
  str_array_free(&o);
  return (jlong)(intptr_t)d;
}

JNIEXPORT void JNI(datasetFree)(JNIEnv *env, jclass c, jlong ds) {
  (void)env;
  (void)c;
  lance_dataset_free(PTR(LanceDataset, ds));
}

JNIEXPORT jbyteArray JNI(datasetExportSnapshot)(JNIEnv *env, jclass c, jlong ds) {
  (void)c;
  uint8_t *out = NULL;
  size_t len = 0;
  if (!check(env, lance_dataset_export_snapshot(PTR(LanceDataset, ds), &out, &len))) return NULL;
  return take_bytes(env, out, len);
}

JNIEXPORT jbyteArray JNI(datasetExportSplitSnapshot)(JNIEnv *env, jclass c, jlong ds, jbyteArray split) {
  (void)c;
  LanceSplit *s = split_in(env, split);
  if (!s) return NULL;
  uint8_t *out = NULL;
  size_t len = 0;
  int32_t rc = lance_dataset_export_split_snapshot(PTR(LanceDataset, ds), s, &out, &len);
  lance_split_free(s);
  if (!check(env, rc)) return NULL;
  return take_bytes(env, out, len);
}

JNIEXPORT jlong JNI(datasetVersion)(JNIEnv *env, jclass c, jlong ds) {
  (void)env;
  (void)c;
  return (jlong)lance_dataset_version(PTR(LanceDataset, ds));
}

JNIEXPORT jlong JNI(datasetLatestVersion)(JNIEnv *env, jclass c, jlong ds) {
  (void)c;
  uint64_t v = 0;
  check(env, lance_dataset_latest_version(PTR(LanceDataset, ds), &v));
  return (jlong)v;
}

/* The table on a branch ("main" = the default one) at a version of it (0 = its latest). */
JNIEXPORT jlong JNI(datasetOpenBranch)(JNIEnv *env, jclass c, jstring uri, jobjectArray options, jstring branch,
                                       jlong version) {
  (void)c;
  int ok = 1;
  char *u = utf8(env, uri, "uri", &ok);
  char *b = ok ? utf8(env, branch, "branch", &ok) : NULL;
  StrArray o = {0};
  LanceDataset *d = NULL;
  if (ok && str_array(env, options, "storage options", 0, &o)) {
    d = lance_dataset_open_branch(u, (const char *const *)o.items, b, (uint64_t)version);
    if (!d) throw_last(env);
  }
  str_array_free(&o);
  free(u);
  free(b);
  return (jlong)(intptr_t)d;
}

/* The table at the version (and branch) a tag names. */
JNIEXPORT jlong JNI(datasetOpenTag)(JNIEnv *env, jclass c, jstring uri, jobjectArray options, jstring tag) {
  (void)c;
  int ok = 1;
  char *u = utf8(env, uri, "uri", &ok);
  char *t = ok ? utf8(env, tag, "tag", &ok) : NULL;
  StrArray o = {0};
  LanceDataset *d = NULL;
  if (ok && str_array(env, options, "storage options", 0, &o)) {
    d = lance_dataset_open_tag(u, (const char *const *)o.items, t);
    if (!d) throw_last(env);
  }
  str_array_free(&o);
  free(u);
  free(t);
  return (jlong)(intptr_t)d;
}

/* A catalog table on a branch (at a version of it, 0 = latest) or at a tag (branch NULL). */
JNIEXPORT jlong JNI(catalogOpenTableRef)(JNIEnv *env, jclass c, jlong h, jobjectArray ns, jstring table,
                                         jstring branch, jstring tag, jlong version) {
  (void)c;
  int ok = 1;
  char *t = utf8(env, table, "table", &ok);
  char *b = ok ? utf8(env, branch, "branch", &ok) : NULL;
  char *g = ok ? utf8(env, tag, "tag", &ok) : NULL;
  StrArray n = {0};
  LanceDataset *d = NULL;
  if (ok && str_array(env, ns, "namespace", 0, &n)) {
    d = g ? lance_catalog_open_table_tag(PTR(LanceCatalog, h), (const char *const *)n.items, n.len, t, g)
          : lance_catalog_open_table_branch(PTR(LanceCatalog, h), (const char *const *)n.items, n.len, t, b,
                                            (uint64_t)version);
    if (!d) throw_last(env);
  }
  str_array_free(&n);
  free(t);
  free(b);
  free(g);
  return (jlong)(intptr_t)d;
}

JNIEXPORT jstring JNI(datasetBranch)(JNIEnv *env, jclass c, jlong ds) {
  (void)c;
  return new_string(env, lance_dataset_branch(PTR(LanceDataset, ds)));
}

/* A new branch from `version` of the handle's branch (0 = its version): the branch's handle. */
JNIEXPORT jlong JNI(datasetCreateBranch)(JNIEnv *env, jclass c, jlong ds, jstring name, jlong version) {
  (void)c;
  int ok = 1;
  char *n = utf8(env, name, "branch name", &ok);
  LanceDataset *out = NULL;
  if (ok) check(env, lance_dataset_create_branch(PTR(LanceDataset, ds), n, (uint64_t)version, &out));
  free(n);
  return (jlong)(intptr_t)out;
}

JNIEXPORT void JNI(datasetDeleteBranch)(JNIEnv *env, jclass c, jlong ds, jstring name) {
  (void)c;
  int ok = 1;
  char *n = utf8(env, name, "branch name", &ok);
  if (ok) check(env, lance_dataset_delete_branch(PTR(LanceDataset, ds), n));
  free(n);
}

/* The table's branches as String[]{name, parent, parent version (decimal), ...}. */
JNIEXPORT jobjectArray JNI(datasetBranches)(JNIEnv *env, jclass c, jlong ds) {
  (void)c;
  LanceBranchList *l = NULL;
  if (!check(env, lance_dataset_branches(PTR(LanceDataset, ds), &l))) return NULL;
  size_t n = lance_branch_list_count(l);
  jobjectArray out = (*env)->NewObjectArray(env, (jsize)(3 * n), g_string, NULL);
  for (size_t i = 0; out && i < n; i++) {
    char version[32];
    snprintf(version, sizeof version, "%llu", (unsigned long long)lance_branch_list_parent_version(l, i));
    const char *parts[3] = {lance_branch_list_name(l, i), lance_branch_list_parent(l, i), version};
    for (int k = 0; k < 3; k++) {
      jstring s = new_string(env, parts[k]);
      if (!s) {
        out = NULL;
        break;
      }
      (*env)->SetObjectArrayElement(env, out, (jsize)(3 * i + k), s);
      (*env)->DeleteLocalRef(env, s);
    }
  }
  lance_branch_list_free(l);
  return out;
}

/* This version cloned into a new table at `target` that references this table's files. */
JNIEXPORT jlong JNI(datasetShallowClone)(JNIEnv *env, jclass c, jlong ds, jstring target, jobjectArray options) {
  (void)c;
  int ok = 1;
  char *t = utf8(env, target, "target uri", &ok);
  StrArray o = {0};
  LanceDataset *out = NULL;
  if (ok && str_array(env, options, "storage options", 0, &o))
    check(env, lance_dataset_shallow_clone(PTR(LanceDataset, ds), t, (const char *const *)o.items, &out));
  str_array_free(&o);
  free(t);
  return (jlong)(intptr_t)out;
}

JNIEXPORT jstring JNI(datasetUri)(JNIEnv *env, jclass c, jlong ds) {
  (void)c;
  return new_string(env, lance_dataset_uri(PTR(LanceDataset, ds)));
}

JNIEXPORT jlong JNI(datasetCountRows)(JNIEnv *env, jclass c, jlong ds, jstring filter) {
  (void)c;
  int ok = 1;
  char *f = utf8(env, filter, "filter", &ok);
  if (!ok) return 0;
  uint64_t n = 0;
  check(env, lance_dataset_count_rows_where_v2(PTR(LanceDataset, ds), f, &n, NULL));
  free(f);
  return (jlong)n;
}

JNIEXPORT jlong JNI(splitCountRows)(JNIEnv *env, jclass c, jlong ds, jbyteArray split, jstring filter) {
  (void)c;
  int ok = 1;
  char *f = utf8(env, filter, "filter", &ok);
  if (!ok) return 0;
  LanceSplit *s = split_in(env, split);
  uint64_t n = 0;
  if (s) {
    check(env, lance_split_count_rows_v2(PTR(LanceDataset, ds), s, f, &n, NULL));
    lance_split_free(s);
  }
  free(f);
  return (jlong)n;
}

/* The dataset's schema as a malloc'd ArrowSchema owned by Java (Native.schemaRelease). */
JNIEXPORT jlong JNI(datasetSchema)(JNIEnv *env, jclass c, jlong ds) {
  (void)c;
  struct ArrowSchema *s = calloc(1, sizeof *s);
  if (!s) {
    throw_code(env, LANCE_ERR_INTERNAL, "out of memory");
    return 0;
  }
  if (!check(env, lance_dataset_schema(PTR(LanceDataset, ds), s))) {
    free(s);
    return 0;
  }
  return (jlong)(intptr_t)s;
}

/* Versions as a long[] of (version, timestamp_ms) pairs. */
/* The table's versions as Dataset.Version[] (version, commit time in milliseconds). */
JNIEXPORT jobjectArray JNI(datasetVersions)(JNIEnv *env, jclass c, jlong ds) {
  (void)c;
  LanceVersionInfo *list = NULL;
  size_t n = 0;
  if (!check(env, lance_dataset_versions(PTR(LanceDataset, ds), &list, &n))) return NULL;
  jclass k = (*env)->FindClass(env, "org/lancehost/Dataset$Version");
  jobjectArray out = k ? (*env)->NewObjectArray(env, (jsize)n, k, NULL) : NULL;
  for (size_t i = 0; out && i < n; i++) {
    jobject v = new_object(env, "org/lancehost/Dataset$Version", "(JJ)V", (jlong)list[i].version, (jlong)list[i].timestamp_ms);
    if (!v) {
      out = NULL;
      break;
    }
    (*env)->SetObjectArrayElement(env, out, (jsize)i, v);
    (*env)->DeleteLocalRef(env, v);
  }
  lance_version_info_list_free(list, n);
  return out;
}
