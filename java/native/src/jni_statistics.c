/* JNI glue of the Java API (org.lancehost.Native): statistics. See jni_common.c. */
#include "jni_common.h"

/* ---- statistics and blobs ---------------------------------------------------------------- */

/* Object[]{long[] fragments: (id, physical rows, deleted rows, bytes or -1) each,
 * String[] column names, long[] column bytes (-1 = unknown)}. */
/* The snapshot's statistics as a Dataset.Statistics (FragmentStats per fragment, bytes per column). */
JNIEXPORT jobject JNI(datasetStatistics)(JNIEnv *env, jclass c, jlong ds) {
  (void)c;
  LanceTableStats *st = NULL;
  if (!check(env, lance_dataset_statistics_v2(PTR(LanceDataset, ds), &st, NULL))) return NULL;
  size_t nf = lance_table_stats_fragment_count(st), nc = lance_table_stats_column_count(st);
  jclass fk = (*env)->FindClass(env, "org/lancehost/Dataset$FragmentStats");
  jobjectArray frags = fk ? (*env)->NewObjectArray(env, (jsize)nf, fk, NULL) : NULL;
  jobjectArray names = (*env)->NewObjectArray(env, (jsize)nc, g_string, NULL);
  jlongArray bytes = (*env)->NewLongArray(env, (jsize)nc);
  int ok = frags && names && bytes;
  for (size_t i = 0; ok && i < nf; i++) {
    LanceFragmentStats f;
    memset(&f, 0, sizeof f);
    f.struct_size = sizeof f;
    if (!check(env, lance_table_stats_fragment_v2(st, i, &f))) { ok = 0; break; }
    jobject one = new_object(env, "org/lancehost/Dataset$FragmentStats", "(JJJJ)V", (jlong)f.fragment_id,
                             (jlong)f.physical_rows, (jlong)f.deleted_rows,
                             f.has_bytes_on_disk ? (jlong)f.bytes_on_disk : (jlong)-1);
    if (!one) { ok = 0; break; }
    (*env)->SetObjectArrayElement(env, frags, (jsize)i, one);
    (*env)->DeleteLocalRef(env, one);
  }
  for (size_t i = 0; ok && i < nc; i++) {
    LanceColumnStats col;
    memset(&col, 0, sizeof col);
    col.struct_size = sizeof col;
    if (!check(env, lance_table_stats_column_v2(st, i, &col))) { ok = 0; break; }
    jstring n = new_string(env, col.name);
    if (!n) { ok = 0; break; }
    (*env)->SetObjectArrayElement(env, names, (jsize)i, n);
    (*env)->DeleteLocalRef(env, n);
    jlong b = col.has_bytes_on_disk ? (jlong)col.bytes_on_disk : -1;
    (*env)->SetLongArrayRegion(env, bytes, (jsize)i, 1, &b);
  }
  lance_table_stats_free(st);
  if (!ok) return NULL;
  return new_object(env, "org/lancehost/Dataset$Statistics",
                    "([Lorg/lancehost/Dataset$FragmentStats;[Ljava/lang/String;[J)V", frags, names, bytes);
}

JNIEXPORT jlong JNI(blobsTake)(JNIEnv *env, jclass c, jlong ds, jstring column, jlongArray row_ids) {
  (void)c;
  if (!row_ids) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "row ids are null");
    return 0;
  }
  int ok = 1;
  char *col = utf8(env, column, "column", &ok);
  if (!ok) return 0;
  jsize n = (*env)->GetArrayLength(env, row_ids);
  jlong *ids = (*env)->GetLongArrayElements(env, row_ids, NULL);
  LanceBlobs *b = NULL;
  if (ids) {
    check(env, lance_dataset_take_blobs(PTR(LanceDataset, ds), col, (const uint64_t *)ids, (size_t)n, &b));
    (*env)->ReleaseLongArrayElements(env, row_ids, ids, JNI_ABORT);
  }
  free(col);
  return (jlong)(intptr_t)b;
}

JNIEXPORT void JNI(blobsFree)(JNIEnv *env, jclass c, jlong h) {
  (void)env;
  (void)c;
  lance_blobs_free(PTR(LanceBlobs, h));
}

JNIEXPORT jlong JNI(blobsCount)(JNIEnv *env, jclass c, jlong h) {
  (void)env;
  (void)c;
  return (jlong)lance_blobs_count(PTR(LanceBlobs, h));
}

/* Object[]{long[]{row_id, size, kind, is_null}, String uri or null}. */
/* Blob `index`'s descriptor as a Blobs.Info. */
JNIEXPORT jobject JNI(blobsInfo)(JNIEnv *env, jclass c, jlong h, jlong index) {
  (void)c;
  if (index < 0) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "blob index is negative");
    return NULL;
  }
  LanceBlobInfo info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (!check(env, lance_blobs_info(PTR(LanceBlobs, h), (size_t)index, &info))) return NULL;
  jstring uri = info.uri ? new_string(env, info.uri) : NULL;
  if ((*env)->ExceptionCheck(env)) return NULL;
  return new_object(env, "org/lancehost/Blobs$Info", "(JJIZLjava/lang/String;)V", (jlong)info.row_id, (jlong)info.size,
                    (jint)info.kind, (jboolean)(info.is_null != 0), uri);
}

JNIEXPORT jbyteArray JNI(blobsRead)(JNIEnv *env, jclass c, jlong h, jlong index, jlong offset, jlong length) {
  (void)c;
  if (index < 0 || offset < 0 || length < 0) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "blob index, offset and length must not be negative");
    return NULL;
  }
  uint8_t *bytes = NULL;
  size_t len = 0;
  if (!check(env, lance_blobs_read_alloc(PTR(LanceBlobs, h), (size_t)index, (uint64_t)offset, (uint64_t)length, &bytes, &len)))
    return NULL;
  return take_bytes(env, bytes, len);
}
