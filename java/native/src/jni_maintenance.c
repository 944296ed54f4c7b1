/* JNI glue of the Java API (org.lancehost.Native): compaction, cleanup, tags and combining
 * splits. Results are the records of org.lancehost.Maintenance, built here. See jni_common.c. */
#include "jni_common.h"

JNIEXPORT jobject JNI(compact)(JNIEnv *env, jclass c, jlong ds, jlong target_rows, jlong rows_per_group,
                               jfloat deletion_threshold, jboolean keep_deletions) {
  (void)c;
  if (target_rows < 0 || rows_per_group < 0 || !(deletion_threshold >= 0.0f && deletion_threshold <= 1.0f)) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT,
               "compaction options: row counts must be >= 0 and the deletion threshold in [0, 1] (0: Lance's default)");
    return NULL;
  }
  LanceCompactParams p;
  if (!check(env, lance_compact_params_init_v2(&p, sizeof p))) return NULL;
  if (target_rows > 0) p.target_rows_per_fragment = (uint64_t)target_rows;
  if (rows_per_group > 0) p.max_rows_per_group = (uint64_t)rows_per_group;
  if (deletion_threshold > 0.0f) p.deletion_threshold = deletion_threshold;
  p.keep_deletions = keep_deletions ? 1 : 0;
  LanceCompactResult r;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  if (!check(env, lance_dataset_compact(PTR(LanceDataset, ds), &p, NULL, &r))) return NULL;
  return new_object(env, "org/lancehost/Maintenance$CompactResult", "(JJJJJ)V", (jlong)r.version,
              (jlong)r.fragments_removed, (jlong)r.fragments_added, (jlong)r.files_removed, (jlong)r.files_added);
}

JNIEXPORT jobject JNI(cleanup)(JNIEnv *env, jclass c, jlong ds, jlong older_than_ms, jboolean delete_unverified) {
  (void)c;
  if (older_than_ms < 0) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "cleanup: the age must be >= 0");
    return NULL;
  }
  uint64_t versions = 0, bytes = 0;
  if (!check(env, lance_dataset_cleanup(PTR(LanceDataset, ds), (uint64_t)older_than_ms, delete_unverified, &versions,
                                        &bytes)))
    return NULL;
  return new_object(env, "org/lancehost/Maintenance$CleanupResult", "(JJ)V", (jlong)versions, (jlong)bytes);
}

JNIEXPORT void JNI(createTag)(JNIEnv *env, jclass c, jlong ds, jstring name, jlong version) {
  (void)c;
  if (version < 0) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "a tag's version must be >= 0 (0: the handle's version)");
    return;
  }
  int ok = 1;
  char *n = utf8(env, name, "tag name", &ok);
  if (!ok) return;
  check(env, lance_dataset_create_tag(PTR(LanceDataset, ds), n, (uint64_t)version));
  free(n);
}

JNIEXPORT void JNI(deleteTag)(JNIEnv *env, jclass c, jlong ds, jstring name) {
  (void)c;
  int ok = 1;
  char *n = utf8(env, name, "tag name", &ok);
  if (!ok) return;
  check(env, lance_dataset_delete_tag(PTR(LanceDataset, ds), n));
  free(n);
}

/* The tags as Maintenance.Tag[], sorted by name. */
JNIEXPORT jobjectArray JNI(tags)(JNIEnv *env, jclass c, jlong ds) {
  (void)c;
  LanceTagList *list = NULL;
  if (!check(env, lance_dataset_tags(PTR(LanceDataset, ds), &list))) return NULL;
  size_t n = lance_tag_list_count(list);
  jobjectArray out = NULL;
  jclass k = (*env)->FindClass(env, "org/lancehost/Maintenance$Tag");
  jmethodID ctor = k ? (*env)->GetMethodID(env, k, "<init>", "(Ljava/lang/String;J)V") : NULL;
  if (ctor) out = (*env)->NewObjectArray(env, (jsize)n, k, NULL);
  for (size_t i = 0; out && i < n; i++) {
    jstring name = new_string(env, lance_tag_list_name(list, i));
    jobject t = name ? (*env)->NewObject(env, k, ctor, name, (jlong)lance_tag_list_version(list, i)) : NULL;
    if (!t) {
      out = NULL;
      break;
    }
    (*env)->SetObjectArrayElement(env, out, (jsize)i, t);
    (*env)->DeleteLocalRef(env, t);
    (*env)->DeleteLocalRef(env, name);
  }
  lance_tag_list_free(list);
  return out;
}

/* Several splits' bytes combined into one split's bytes (lance_splits_combine). */
JNIEXPORT jbyteArray JNI(splitsCombine)(JNIEnv *env, jclass c, jobjectArray splits) {
  (void)c;
  if (!splits) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "splits must not be null");
    return NULL;
  }
  jsize n = (*env)->GetArrayLength(env, splits);
  LanceSplit **in = calloc(n > 0 ? (size_t)n : 1, sizeof *in);
  if (!in) {
    throw_code(env, LANCE_ERR_INTERNAL, "out of memory");
    return NULL;
  }
  jbyteArray result = NULL;
  jsize got = 0;
  for (; got < n; got++) {
    jbyteArray b = (jbyteArray)(*env)->GetObjectArrayElement(env, splits, got);
    in[got] = split_in(env, b);
    if (b) (*env)->DeleteLocalRef(env, b);
    if (!in[got]) break;
  }
  if (got == n) {
    LanceSplit *combined = NULL;
    if (check(env, lance_splits_combine((const LanceSplit *const *)in, (size_t)n, &combined))) {
      uint8_t *bytes = NULL;
      size_t len = 0;
      if (check(env, lance_split_serialize(combined, &bytes, &len))) result = take_bytes(env, bytes, len);
      lance_split_free(combined);
    }
  }
  for (jsize i = 0; i < got; i++) lance_split_free(in[i]);
  free(in);
  return result;
}
