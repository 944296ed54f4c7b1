/* JNI glue of the Java API (org.lancehost.Native): session. See jni_common.c. */
#include "jni_common.h"

/* ---- session ----------------------------------------------------------------------------- */

/* Session.Options' fields by name, tied to LanceSessionOptions' here and nowhere else: the
 * glue reads and writes each field by its Java name, so no order is shared with Java. */
#define SESSION_FIELDS(X)                                   \
  X("indexCacheBytes", index_cache_bytes, uint64_t)         \
  X("metadataCacheBytes", metadata_cache_bytes, uint64_t)   \
  X("workerThreads", worker_threads, uint32_t)              \
  X("scanBatchReadahead", scan_batch_readahead, uint32_t)   \
  X("scanFragmentReadahead", scan_fragment_readahead, uint32_t) \
  X("scanIoBufferBytes", scan_io_buffer_bytes, uint64_t)    \
  X("dataCacheMemoryBytes", data_cache_memory_bytes, uint64_t) \
  X("dataCacheDiskBytes", data_cache_disk_bytes, uint64_t)  \
  X("dataCacheBlockBytes", data_cache_block_bytes, uint64_t)

static int set_long(JNIEnv *env, jobject o, jclass k, const char *field, jlong v) {
  jfieldID f = (*env)->GetFieldID(env, k, field, "J");
  if (!f) return 0;
  (*env)->SetLongField(env, o, f, v);
  return 1;
}

static int get_long(JNIEnv *env, jobject o, jclass k, const char *field, jlong *v) {
  jfieldID f = (*env)->GetFieldID(env, k, field, "J");
  if (!f) return 0;
  *v = (*env)->GetLongField(env, o, f);
  return 1;
}

/* The library's defaults as a new org.lancehost.Session.Options. */
JNIEXPORT jobject JNI(sessionDefaults)(JNIEnv *env, jclass c) {
  (void)c;
  LanceSessionOptions o;
  if (!check(env, lance_session_options_default_v2(&o, sizeof o))) return NULL;
  jobject out = new_object(env, "org/lancehost/Session$Options", "()V");
  if (!out) return NULL;
  jclass k = (*env)->GetObjectClass(env, out);
  int ok = k != NULL;
#define SET(name, member, type) ok = ok && set_long(env, out, k, name, (jlong)o.member);
  SESSION_FIELDS(SET)
#undef SET
  jfieldID off = ok ? (*env)->GetFieldID(env, k, "dataCacheDisabled", "Z") : NULL;
  if (off) (*env)->SetBooleanField(env, out, off, (jboolean)(o.data_cache_disabled != 0));
  if (k) (*env)->DeleteLocalRef(env, k);
  return ok && off ? out : NULL;
}

/* Applies an org.lancehost.Session.Options to the process's session. */
JNIEXPORT void JNI(sessionConfigure)(JNIEnv *env, jclass c, jobject options) {
  (void)c;
  if (!options) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "session options are null");
    return;
  }
  jclass k = (*env)->GetObjectClass(env, options);
  if (!k) return;
  LanceSessionOptions o;
  lance_session_options_default_v2(&o, sizeof o);
  int ok = 1;
  jlong v = 0;
#define GET(name, member, type) \
  if (ok && (ok = get_long(env, options, k, name, &v))) o.member = (type)v;
  SESSION_FIELDS(GET)
#undef GET
  jfieldID off = ok ? (*env)->GetFieldID(env, k, "dataCacheDisabled", "Z") : NULL;
  jfieldID dir_field = off ? (*env)->GetFieldID(env, k, "dataCacheDiskDir", "Ljava/lang/String;") : NULL;
  char *dir = NULL;
  if (dir_field) {
    o.data_cache_disabled = (*env)->GetBooleanField(env, options, off) ? 1 : 0;
    jstring d = (jstring)(*env)->GetObjectField(env, options, dir_field);
    dir = utf8(env, d, "data cache directory", &ok);
    if (d) (*env)->DeleteLocalRef(env, d);
    o.data_cache_disk_dir = dir;
    if (ok) check(env, lance_session_configure_v2(&o));
  }
  free(dir);
  (*env)->DeleteLocalRef(env, k);
}

/* Session statistics as a new java.util.LinkedHashMap<String, Long>, named here after
 * LanceSessionStats' fields (no order shared with Java). */
JNIEXPORT jobject JNI(sessionStats)(JNIEnv *env, jclass c) {
  (void)c;
  LanceSessionStats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  if (!check(env, lance_session_stats_v2(&st))) return NULL;
  struct { const char *name; uint64_t value; } items[] = {
    {"index_hits", st.index_hits}, {"index_misses", st.index_misses}, {"index_entries", st.index_entries},
    {"index_bytes", st.index_bytes}, {"metadata_hits", st.metadata_hits}, {"metadata_misses", st.metadata_misses},
    {"metadata_entries", st.metadata_entries}, {"metadata_bytes", st.metadata_bytes},
    {"data_cache_hits", st.data_cache_hits}, {"data_cache_misses", st.data_cache_misses},
    {"data_cache_hit_bytes", st.data_cache_hit_bytes}, {"data_cache_storage_requests", st.data_cache_storage_requests},
    {"data_cache_storage_bytes", st.data_cache_storage_bytes}, {"data_cache_evictions", st.data_cache_evictions},
    {"data_cache_errors", st.data_cache_errors}, {"data_cache_memory_bytes", st.data_cache_memory_bytes},
    {"data_cache_disk_bytes", st.data_cache_disk_bytes}, {"data_cache_memory_capacity", st.data_cache_memory_capacity},
    {"data_cache_disk_capacity", st.data_cache_disk_capacity}, {"data_cache_disk_enabled", st.data_cache_disk_enabled},
    {"data_cache_disk_write_drops", st.data_cache_disk_write_drops}, {"text_tail_hits", st.text_tail_hits},
    {"text_tail_misses", st.text_tail_misses},
  };
  jobject map = new_object(env, "java/util/LinkedHashMap", "()V");
  jclass map_class = map ? (*env)->GetObjectClass(env, map) : NULL;
  jmethodID put = map_class ? (*env)->GetMethodID(env, map_class, "put",
                                                  "(Ljava/lang/Object;Ljava/lang/Object;)Ljava/lang/Object;") : NULL;
  jclass long_class = put ? (*env)->FindClass(env, "java/lang/Long") : NULL;
  jmethodID value_of = long_class ? (*env)->GetStaticMethodID(env, long_class, "valueOf", "(J)Ljava/lang/Long;") : NULL;
  for (size_t i = 0; value_of && i < sizeof items / sizeof items[0]; i++) {
    jstring key = new_string(env, items[i].name);
    jobject value = key ? (*env)->CallStaticObjectMethod(env, long_class, value_of, (jlong)items[i].value) : NULL;
    if (value) {
      jobject prev = (*env)->CallObjectMethod(env, map, put, key, value);
      if (prev) (*env)->DeleteLocalRef(env, prev);
    }
    if (key) (*env)->DeleteLocalRef(env, key);
    if (value) (*env)->DeleteLocalRef(env, value);
    if (!key || !value || (*env)->ExceptionCheck(env)) {
      map = NULL;
      break;
    }
  }
  if (map_class) (*env)->DeleteLocalRef(env, map_class);
  if (long_class) (*env)->DeleteLocalRef(env, long_class);
  return value_of ? map : NULL;
}
