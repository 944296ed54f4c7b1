/* JNI glue of the Java API (org.lancehost.Native): index. See jni_common.c. */
#include "jni_common.h"

/* ---- indexes ----------------------------------------------------------------------------- */

/* Indexes as String[] of (name, column, type, metric or null) quadruples. */
JNIEXPORT jobjectArray JNI(datasetIndexes)(JNIEnv *env, jclass c, jlong ds) {
  (void)c;
  LanceIndexList *list = NULL;
  if (!check(env, lance_dataset_indexes(PTR(LanceDataset, ds), &list))) return NULL;
  size_t n = lance_index_list_count(list);
  jobjectArray out = (*env)->NewObjectArray(env, (jsize)(4 * n), g_string, NULL);
  for (size_t i = 0; out && i < n; i++) {
    const char *parts[4] = {lance_index_list_name(list, i), lance_index_list_column(list, i),
                            lance_index_list_type(list, i), lance_index_list_metric(list, i)};
    for (int j = 0; j < 4; j++) {
      if (!parts[j]) continue;
      jstring s = new_string(env, parts[j]);
      if (!s) { out = NULL; break; }
      (*env)->SetObjectArrayElement(env, out, (jsize)(4 * i + (size_t)j), s);
      (*env)->DeleteLocalRef(env, s);
    }
  }
  lance_index_list_free(list);
  return out;
}

/* kind 0 = vector (params: index_type, metric, num_partitions, num_sub_vectors), 1 = scalar
 * (params: index_type), 2 = inverted (params: with_position). Returns the new version. */
/* The parameters of an index build of `kind` (0 vector, 1 scalar, 2 inverted) from `params`:
 * vector {type, metric, partitions, sub-vectors}, scalar {type}, inverted {with positions}. */

int index_params(JNIEnv *env, jint kind, jintArray params, IndexParams *out) {
  jint p[4] = {0, 0, 0, 0};
  if (params) {
    jsize n = (*env)->GetArrayLength(env, params);
    (*env)->GetIntArrayRegion(env, params, 0, n < 4 ? n : 4, p);
  }
  lance_vector_index_params_init_v2(&out->v, sizeof out->v);
  out->v.index_type = p[0];
  out->v.metric = p[1];
  out->v.num_partitions = (uint32_t)p[2];
  out->v.num_sub_vectors = (uint32_t)p[3];
  lance_scalar_index_params_init_v2(&out->sc, sizeof out->sc);
  out->sc.index_type = p[0];
  lance_inverted_index_params_init_v2(&out->iv, sizeof out->iv);
  out->iv.with_position = p[0] != 0;
  if (kind < 0 || kind > 2) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "unknown index kind");
    return 0;
  }
  return 1;
}

JNIEXPORT jlong JNI(createIndex)(JNIEnv *env, jclass c, jlong ds, jint kind, jstring column, jstring name,
                                 jboolean replace, jintArray params) {
  (void)c;
  int ok = 1;
  char *col = utf8(env, column, "column", &ok);
  char *nm = ok ? utf8(env, name, "index name", &ok) : NULL;
  IndexParams ip;
  LanceDataset *out = NULL;
  if (ok && index_params(env, kind, params, &ip)) {
    LanceDataset *d = PTR(LanceDataset, ds);
    int32_t rc = kind == 0   ? lance_dataset_create_vector_index(d, col, nm, replace, &ip.v, &out)
                 : kind == 1 ? lance_dataset_create_scalar_index(d, col, nm, replace, &ip.sc, &out)
                             : lance_dataset_create_inverted_index(d, col, nm, replace, &ip.iv, &out);
    check(env, rc);
  }
  jlong version = out ? (jlong)lance_dataset_version(out) : 0;
  lance_dataset_free(out);
  free(col);
  free(nm);
  return version;
}

/* Trains a vector index's model (IVF centroids, PQ codebook) on the coordinator: the model bytes. */
JNIEXPORT jbyteArray JNI(trainVectorIndex)(JNIEnv *env, jclass c, jlong ds, jstring column, jintArray params) {
  (void)c;
  int ok = 1;
  char *col = utf8(env, column, "column", &ok);
  IndexParams ip;
  jbyteArray out = NULL;
  if (ok && index_params(env, 0, params, &ip)) {
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (check(env, lance_dataset_train_vector_index(PTR(LanceDataset, ds), col, &ip.v, &bytes, &len, NULL)))
      out = take_bytes(env, bytes, len);
  }
  free(col);
  return out;
}

/* Plans a distributed index build: one task (bytes for a worker) per build split. */
JNIEXPORT jobjectArray JNI(planIndexBuild)(JNIEnv *env, jclass c, jlong ds, jint kind, jstring column, jstring name,
                                           jboolean replace, jintArray params, jbyteArray model, jint num_splits,
                                           jboolean unindexed_only) {
  (void)c;
  int ok = 1;
  char *col = utf8(env, column, "column", &ok);
  char *nm = ok ? utf8(env, name, "index name", &ok) : NULL;
  IndexParams ip;
  jobjectArray out = NULL;
  if (ok && index_params(env, kind, params, &ip)) {
    LanceIndexBuildPlanParams plan;
    lance_index_build_plan_params_init_v2(&plan, sizeof plan);
    plan.num_splits = (uint32_t)num_splits;
    plan.unindexed_only = unindexed_only ? 1 : 0;
    LanceBytesList *list = NULL;
    LanceDataset *d = PTR(LanceDataset, ds);
    int32_t rc;
    if (kind == 0) {
      jsize n = model ? (*env)->GetArrayLength(env, model) : 0;
      jbyte *m = model ? (*env)->GetByteArrayElements(env, model, NULL) : NULL;
      if (model && !m) {
        free(col);
        free(nm);
        return NULL;
      }
      rc = lance_dataset_plan_vector_index_build(d, col, nm, replace, (const uint8_t *)m, (size_t)n, &plan, &list);
      if (m) (*env)->ReleaseByteArrayElements(env, model, m, JNI_ABORT);
    } else if (kind == 1) {
      rc = lance_dataset_plan_scalar_index_build(d, col, nm, replace, &ip.sc, &plan, &list);
    } else {
      rc = lance_dataset_plan_inverted_index_build(d, col, nm, replace, &ip.iv, &plan, &list);
    }
    if (check(env, rc)) {
      size_t count = lance_bytes_list_count(list);
      out = (*env)->NewObjectArray(env, (jsize)count, g_byte_array, NULL);
      for (size_t i = 0; out && i < count; i++) {
        size_t len = 0;
        const uint8_t *b = lance_bytes_list_get(list, i, &len);
        jbyteArray one = bytes_out(env, b, len);
        if (!one) {
          out = NULL;
          break;
        }
        (*env)->SetObjectArrayElement(env, out, (jsize)i, one);
        (*env)->DeleteLocalRef(env, one);
      }
      lance_bytes_list_free(list);
    }
  }
  free(col);
  free(nm);
  return out;
}

/* Builds one task's index segment on a worker: the segment bytes (nothing committed). */
JNIEXPORT jbyteArray JNI(indexBuildTask)(JNIEnv *env, jclass c, jlong ds, jbyteArray task) {
  (void)c;
  if (!task) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "the build task is null");
    return NULL;
  }
  jsize n = (*env)->GetArrayLength(env, task);
  jbyte *t = (*env)->GetByteArrayElements(env, task, NULL);
  if (!t) return NULL;
  uint8_t *bytes = NULL;
  size_t len = 0;
  jbyteArray out = NULL;
  if (check(env, lance_index_build_task_execute(PTR(LanceDataset, ds), (const uint8_t *)t, (size_t)n, &bytes, &len, NULL)))
    out = take_bytes(env, bytes, len);
  (*env)->ReleaseByteArrayElements(env, task, t, JNI_ABORT);
  return out;
}

/* Commits the segments of one build plan as one index in one new version: that version. */
JNIEXPORT jlong JNI(commitIndexBuild)(JNIEnv *env, jclass c, jlong ds, jobjectArray segments, jboolean merge) {
  (void)c;
  BytesIn in = {0};
  jlong version = 0;
  if (bytes_in(env, segments, "index segments", &in)) {
    LanceDataset *out = NULL;
    if (check(env, lance_dataset_commit_index_build(PTR(LanceDataset, ds), (const uint8_t *const *)in.ptrs, in.lens,
                                                    in.len, merge, &out)))
      version = (jlong)lance_dataset_version(out);
    lance_dataset_free(out);
  }
  bytes_in_free(env, &in);
  return version;
}

JNIEXPORT void JNI(prewarmIndex)(JNIEnv *env, jclass c, jlong ds, jstring name) {
  (void)c;
  int ok = 1;
  char *nm = utf8(env, name, "index name", &ok);
  if (!ok) return;
  check(env, lance_dataset_prewarm_index(PTR(LanceDataset, ds), nm));
  free(nm);
}
