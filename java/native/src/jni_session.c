/* JNI glue of the Java API (org.lancehost.Native): session. See jni_common.c. */
#include "jni_common.h"

/* ---- session ----------------------------------------------------------------------------- */

/* Defaults as long[]{index_cache_bytes, metadata_cache_bytes, worker_threads,
 * scan_batch_readahead, scan_fragment_readahead, scan_io_buffer_bytes, data_cache_memory_bytes,
 * data_cache_disk_bytes, data_cache_block_bytes, data_cache_disabled}. */
JNIEXPORT jlongArray JNI(sessionDefaults)(JNIEnv *env, jclass c) {
  (void)c;
  LanceSessionOptions o;
  if (!check(env, lance_session_options_default_v2(&o, sizeof o))) return NULL;
  jlong v[10] = {(jlong)o.index_cache_bytes, (jlong)o.metadata_cache_bytes, o.worker_threads, o.scan_batch_readahead,
                 o.scan_fragment_readahead, (jlong)o.scan_io_buffer_bytes, (jlong)o.data_cache_memory_bytes,
                 (jlong)o.data_cache_disk_bytes, (jlong)o.data_cache_block_bytes, o.data_cache_disabled};
  jlongArray out = (*env)->NewLongArray(env, 10);
  if (out) (*env)->SetLongArrayRegion(env, out, 0, 10, v);
  return out;
}

JNIEXPORT void JNI(sessionConfigure)(JNIEnv *env, jclass c, jlongArray values, jstring disk_dir) {
  (void)c;
  if (!values || (*env)->GetArrayLength(env, values) != 10) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "session options: 10 values expected");
    return;
  }
  int ok = 1;
  char *dir = utf8(env, disk_dir, "data cache directory", &ok);
  if (!ok) return;
  jlong v[10];
  (*env)->GetLongArrayRegion(env, values, 0, 10, v);
  LanceSessionOptions o;
  lance_session_options_default_v2(&o, sizeof o);
  o.index_cache_bytes = (uint64_t)v[0];
  o.metadata_cache_bytes = (uint64_t)v[1];
  o.worker_threads = (uint32_t)v[2];
  o.scan_batch_readahead = (uint32_t)v[3];
  o.scan_fragment_readahead = (uint32_t)v[4];
  o.scan_io_buffer_bytes = (uint64_t)v[5];
  o.data_cache_memory_bytes = (uint64_t)v[6];
  o.data_cache_disk_bytes = (uint64_t)v[7];
  o.data_cache_block_bytes = (uint64_t)v[8];
  o.data_cache_disabled = (uint32_t)v[9];
  o.data_cache_disk_dir = dir;
  check(env, lance_session_configure_v2(&o));
  free(dir);
}

/* Session statistics as long[] in LanceSessionStats' field order (23 values). */
JNIEXPORT jlongArray JNI(sessionStats)(JNIEnv *env, jclass c) {
  (void)c;
  LanceSessionStats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  if (!check(env, lance_session_stats_v2(&st))) return NULL;
  jlong v[23] = {(jlong)st.index_hits, (jlong)st.index_misses, (jlong)st.index_entries, (jlong)st.index_bytes,
                 (jlong)st.metadata_hits, (jlong)st.metadata_misses, (jlong)st.metadata_entries, (jlong)st.metadata_bytes,
                 (jlong)st.data_cache_hits, (jlong)st.data_cache_misses, (jlong)st.data_cache_hit_bytes,
                 (jlong)st.data_cache_storage_requests, (jlong)st.data_cache_storage_bytes, (jlong)st.data_cache_evictions,
                 (jlong)st.data_cache_errors, (jlong)st.data_cache_memory_bytes, (jlong)st.data_cache_disk_bytes,
                 (jlong)st.data_cache_memory_capacity, (jlong)st.data_cache_disk_capacity, (jlong)st.data_cache_disk_enabled,
                 (jlong)st.data_cache_disk_write_drops, (jlong)st.text_tail_hits, (jlong)st.text_tail_misses};
  jlongArray out = (*env)->NewLongArray(env, 23);
  if (out) (*env)->SetLongArrayRegion(env, out, 0, 23, v);
  return out;
}
