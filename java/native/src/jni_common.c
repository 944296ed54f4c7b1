/* JNI glue of the Java API (org.lancehost.Native) over lance_host.h.
 *
 * This file only maps arguments, errors and ownership: Java strings become NUL-terminated UTF-8
 * (a string holding NUL is refused, it would be cut short), Java arrays become C arrays, a failed
 * call becomes the Java exception of its error code, and every C object handed to Java is a
 * pointer in a `long` that Java frees exactly once through the matching free function here.
 * Arrow streams, schemas and arrays are malloc'd C structs owned by Java until released.
 * Nothing here decides anything about tables: that is the library's job.
 */
#include "jni_common.h"


jclass g_exception;        /* org.lancehost.LanceException */
jmethodID g_exception_of;  /* static LanceException of(int, String) */
jclass g_string;           /* java.lang.String */
jmethodID g_string_bytes;  /* byte[] getBytes(Charset) */
jmethodID g_string_new;    /* String(byte[], Charset) */
jobject g_utf8;            /* StandardCharsets.UTF_8 */
jclass g_byte_array;       /* byte[] */
jclass g_object;           /* java.lang.Object */
JavaVM *g_vm;
jclass g_host_stream;      /* org.lancehost.HostStream */
jmethodID g_hs_schema;     /* Object[] schemaDescription() */
jmethodID g_hs_next;       /* long[] nextBatch() */
jmethodID g_hs_release;    /* void releaseBatch(long) */
jmethodID g_hs_close;      /* void closeFromNative() */
jmethodID g_throwable_string; /* String Throwable.toString() */
jclass g_io_stats;         /* org.lancehost.IoStats */
jmethodID g_io_stats_new;  /* IoStats(long x 9) */
jclass g_write_result;      /* org.lancehost.Write$Result */
jmethodID g_write_result_new; /* Result(long, boolean, long x 6) */
jclass g_credentials;         /* org.lancehost.Credentials */
jmethodID g_credentials_answer; /* static String[] answer(Provider, String, int[]) */

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
  (void)reserved;
  JNIEnv *env;
  if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  jclass c = (*env)->FindClass(env, "org/lancehost/LanceException");
  if (!c) return JNI_ERR;
  g_exception = (*env)->NewGlobalRef(env, c);
  g_exception_of = (*env)->GetStaticMethodID(env, c, "of", "(ILjava/lang/String;)Lorg/lancehost/LanceException;");
  c = (*env)->FindClass(env, "java/lang/String");
  if (!c) return JNI_ERR;
  g_string = (*env)->NewGlobalRef(env, c);
  g_string_bytes = (*env)->GetMethodID(env, c, "getBytes", "(Ljava/nio/charset/Charset;)[B");
  g_string_new = (*env)->GetMethodID(env, c, "<init>", "([BLjava/nio/charset/Charset;)V");
  jclass cs = (*env)->FindClass(env, "java/nio/charset/StandardCharsets");
  if (!cs) return JNI_ERR;
  jfieldID f = (*env)->GetStaticFieldID(env, cs, "UTF_8", "Ljava/nio/charset/Charset;");
  g_utf8 = (*env)->NewGlobalRef(env, (*env)->GetStaticObjectField(env, cs, f));
  c = (*env)->FindClass(env, "[B");
  if (!c) return JNI_ERR;
  g_byte_array = (*env)->NewGlobalRef(env, c);
  c = (*env)->FindClass(env, "java/lang/Object");
  if (!c) return JNI_ERR;
  g_object = (*env)->NewGlobalRef(env, c);
  g_vm = vm;
  c = (*env)->FindClass(env, "org/lancehost/HostStream");
  if (!c) return JNI_ERR;
  g_host_stream = (*env)->NewGlobalRef(env, c);
  g_hs_schema = (*env)->GetMethodID(env, c, "schemaDescription", "()[Ljava/lang/Object;");
  g_hs_next = (*env)->GetMethodID(env, c, "nextBatch", "()[J");
  g_hs_release = (*env)->GetMethodID(env, c, "releaseBatch", "(J)V");
  g_hs_close = (*env)->GetMethodID(env, c, "closeFromNative", "()V");
  c = (*env)->FindClass(env, "java/lang/Throwable");
  if (!c) return JNI_ERR;
  g_throwable_string = (*env)->GetMethodID(env, c, "toString", "()Ljava/lang/String;");
  c = (*env)->FindClass(env, "org/lancehost/IoStats");
  if (!c) return JNI_ERR;
  g_io_stats = (*env)->NewGlobalRef(env, c);
  g_io_stats_new = (*env)->GetMethodID(env, c, "<init>", "(JJJJJJJJJ)V");
  if (!g_io_stats_new) return JNI_ERR;
  c = (*env)->FindClass(env, "org/lancehost/Write$Result");
  if (!c) return JNI_ERR;
  g_write_result = (*env)->NewGlobalRef(env, c);
  g_write_result_new = (*env)->GetMethodID(env, c, "<init>", "(JZJJJJJJ)V");
  if (!g_write_result_new) return JNI_ERR;
  c = (*env)->FindClass(env, "org/lancehost/Credentials");
  if (!c) return JNI_ERR;
  g_credentials = (*env)->NewGlobalRef(env, c);
  g_credentials_answer = (*env)->GetStaticMethodID(env, c, "answer",
                                                   "(Lorg/lancehost/Credentials$Provider;Ljava/lang/String;[I)[Ljava/lang/String;");
  if (!g_credentials_answer) return JNI_ERR;
  if (!g_exception_of || !g_string_bytes || !g_string_new || !g_utf8 || !g_hs_schema || !g_hs_next || !g_hs_release ||
      !g_hs_close || !g_throwable_string)
    return JNI_ERR;
  return JNI_VERSION_1_8;
}

/* A new object of class `cls` ("org/lancehost/Split") through its constructor of signature
   `sig`: how results cross to Java (typed, never arrays decoded by position). NULL with the
   exception pending on failure. */
jobject new_object(JNIEnv *env, const char *cls, const char *sig, ...) {
  jclass k = (*env)->FindClass(env, cls);
  if (!k) return NULL;
  jmethodID ctor = (*env)->GetMethodID(env, k, "<init>", sig);
  if (!ctor) {
    (*env)->DeleteLocalRef(env, k);
    return NULL;
  }
  va_list ap;
  va_start(ap, sig);
  jobject o = (*env)->NewObjectV(env, k, ctor, ap);
  va_end(ap);
  (*env)->DeleteLocalRef(env, k);
  return o;
}

/* ---- errors ------------------------------------------------------------------------------ */


void throw_code(JNIEnv *env, int32_t code, const char *message) {
  if ((*env)->ExceptionCheck(env)) return;
  jstring m = new_string(env, message ? message : "");
  if (!m) return;
  jobject ex = (*env)->CallStaticObjectMethod(env, g_exception, g_exception_of, (jint)code, m);
  if (ex && !(*env)->ExceptionCheck(env)) (*env)->Throw(env, (jthrowable)ex);
}

/* The library's error of the call that just failed on this thread. */
void throw_last(JNIEnv *env) {
  int32_t code = lance_last_error_code();
  throw_code(env, code == LANCE_OK ? LANCE_ERR_INTERNAL : code, lance_last_error_message());
}

int check(JNIEnv *env, int32_t rc) {
  if (rc == LANCE_OK) return 1;
  throw_last(env);
  return 0;
}

/* A stream's errno, as docs/c-api.md lists them, back to the library's code. */
int32_t errno_code(int e) {
  switch (e) {
    case 2: return LANCE_ERR_NOT_FOUND;
    case 22: return LANCE_ERR_INVALID_ARGUMENT;
    case 13: return LANCE_ERR_PERMISSION_DENIED;
    case 74: return LANCE_ERR_CORRUPT;
    case 95: return LANCE_ERR_NOT_SUPPORTED;
    case 110: return LANCE_ERR_TIMEOUT;
    case 125: return LANCE_ERR_CANCELLED;
    case 12: return LANCE_ERR_OUT_OF_RANGE;
    default: return LANCE_ERR_IO;
  }
}


/* ---- strings and arrays ------------------------------------------------------------------ */

jstring new_string(JNIEnv *env, const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s);
  jbyteArray b = (*env)->NewByteArray(env, (jsize)n);
  if (!b) return NULL;
  (*env)->SetByteArrayRegion(env, b, 0, (jsize)n, (const jbyte *)s);
  jstring out = (jstring)(*env)->NewObject(env, g_string, g_string_new, b, g_utf8);
  (*env)->DeleteLocalRef(env, b);
  return out;
}

/* NUL-terminated UTF-8 copy of a Java string (NULL for null); free with free(). Sets `*ok` to 0
 * with an exception pending when the string cannot be passed on. */
char *utf8(JNIEnv *env, jstring s, const char *what, int *ok) {
  if (!s) return NULL;
  jbyteArray b = (jbyteArray)(*env)->CallObjectMethod(env, s, g_string_bytes, g_utf8);
  if (!b) { *ok = 0; return NULL; }
  jsize n = (*env)->GetArrayLength(env, b);
  char *out = malloc((size_t)n + 1);
  if (!out) {
    (*env)->DeleteLocalRef(env, b);
    throw_code(env, LANCE_ERR_INTERNAL, "out of memory copying a string");
    *ok = 0;
    return NULL;
  }
  (*env)->GetByteArrayRegion(env, b, 0, n, (jbyte *)out);
  (*env)->DeleteLocalRef(env, b);
  out[n] = 0;
  if (memchr(out, 0, (size_t)n)) {
    char msg[200];
    snprintf(msg, sizeof msg, "%s contains a NUL character, which cannot be passed on", what);
    free(out);
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, msg);
    *ok = 0;
    return NULL;
  }
  return out;
}

/* A String[] as a C array of strings. With `terminated`, one NULL more at the end (storage
 * options). NULL for a null array. `*len` gets the Java length. */

void str_array_free(StrArray *a) {
  if (!a->items) return;
  for (size_t i = 0; i < a->len; i++) free(a->items[i]);
  free(a->items);
  a->items = NULL;
}

int str_array(JNIEnv *env, jobjectArray arr, const char *what, int allow_null_items, StrArray *out) {
  out->items = NULL;
  out->len = 0;
  if (!arr) return 1;
  jsize n = (*env)->GetArrayLength(env, arr);
  out->items = calloc((size_t)n + 1, sizeof(char *));
  if (!out->items) {
    throw_code(env, LANCE_ERR_INTERNAL, "out of memory copying strings");
    return 0;
  }
  out->len = (size_t)n;
  for (jsize i = 0; i < n; i++) {
    jstring s = (jstring)(*env)->GetObjectArrayElement(env, arr, i);
    if (!s && !allow_null_items) {
      char msg[200];
      snprintf(msg, sizeof msg, "%s[%d] is null", what, (int)i);
      throw_code(env, LANCE_ERR_INVALID_ARGUMENT, msg);
      str_array_free(out);
      return 0;
    }
    int ok = 1;
    out->items[i] = utf8(env, s, what, &ok);
    (*env)->DeleteLocalRef(env, s);
    if (!ok) {
      str_array_free(out);
      return 0;
    }
  }
  return 1;
}

jbyteArray bytes_out(JNIEnv *env, const uint8_t *data, size_t len) {
  jbyteArray b = (*env)->NewByteArray(env, (jsize)len);
  if (b && len) (*env)->SetByteArrayRegion(env, b, 0, (jsize)len, (const jbyte *)data);
  return b;
}

/* Library-owned bytes (lance_bytes_free) into a Java byte[]; frees them. */
jbyteArray take_bytes(JNIEnv *env, uint8_t *data, size_t len) {
  jbyteArray b = bytes_out(env, data, len);
  lance_bytes_free(data, len);
  return b;
}

jstring take_string(JNIEnv *env, char *s) {
  jstring out = new_string(env, s);
  lance_string_free(s);
  return out;
}

/* A split given as bytes, deserialized for one call. */
LanceSplit *split_in(JNIEnv *env, jbyteArray bytes) {
  if (!bytes) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "split is null");
    return NULL;
  }
  jsize n = (*env)->GetArrayLength(env, bytes);
  jbyte *p = (*env)->GetByteArrayElements(env, bytes, NULL);
  if (!p) return NULL;
  LanceSplit *s = lance_split_deserialize((const uint8_t *)p, (size_t)n);
  (*env)->ReleaseByteArrayElements(env, bytes, p, JNI_ABORT);
  if (!s) throw_last(env);
  return s;
}

struct ArrowArrayStream *new_stream(JNIEnv *env) {
  struct ArrowArrayStream *s = calloc(1, sizeof *s);
  if (!s) throw_code(env, LANCE_ERR_INTERNAL, "out of memory allocating a stream");
  return s;
}

/* The stream `s` filled by a call that returned `rc`: handed to Java, or freed with an error. */
jlong stream_out(JNIEnv *env, int32_t rc, struct ArrowArrayStream *s) {
  if (!check(env, rc)) {
    free(s);
    return 0;
  }
  return (jlong)(intptr_t)s;
}

/* Java byte[][] as C pointer and length arrays pinned for one call. */

void bytes_in_free(JNIEnv *env, BytesIn *b) {
  for (size_t i = 0; i < b->len; i++) {
    if (b->ptrs && b->ptrs[i]) (*env)->ReleaseByteArrayElements(env, b->arrays[i], b->ptrs[i], JNI_ABORT);
    if (b->arrays && b->arrays[i]) (*env)->DeleteLocalRef(env, b->arrays[i]);
  }
  free(b->arrays);
  free(b->ptrs);
  free(b->lens);
  memset(b, 0, sizeof *b);
}

int bytes_in(JNIEnv *env, jobjectArray arr, const char *what, BytesIn *out) {
  memset(out, 0, sizeof *out);
  if (!arr) {
    char msg[120];
    snprintf(msg, sizeof msg, "%s is null", what);
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, msg);
    return 0;
  }
  size_t n = (size_t)(*env)->GetArrayLength(env, arr);
  out->arrays = calloc(n + 1, sizeof(jbyteArray));
  out->ptrs = calloc(n + 1, sizeof(jbyte *));
  out->lens = calloc(n + 1, sizeof(size_t));
  out->len = n;
  if (!out->arrays || !out->ptrs || !out->lens) {
    bytes_in_free(env, out);
    throw_code(env, LANCE_ERR_INTERNAL, "out of memory");
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    out->arrays[i] = (jbyteArray)(*env)->GetObjectArrayElement(env, arr, (jsize)i);
    if (!out->arrays[i]) {
      char msg[120];
      snprintf(msg, sizeof msg, "%s[%zu] is null", what, i);
      bytes_in_free(env, out);
      throw_code(env, LANCE_ERR_INVALID_ARGUMENT, msg);
      return 0;
    }
    out->lens[i] = (size_t)(*env)->GetArrayLength(env, out->arrays[i]);
    out->ptrs[i] = (*env)->GetByteArrayElements(env, out->arrays[i], NULL);
    if (!out->ptrs[i]) {
      bytes_in_free(env, out);
      return 0;
    }
  }
  return 1;
}



/* ---- Arrow streams, schemas, arrays ------------------------------------------------------ */

/* The stream behind a Java handle, or NULL with an exception when it was already released. */
struct ArrowArrayStream *live_stream(JNIEnv *env, jlong h) {
  struct ArrowArrayStream *s = PTR(struct ArrowArrayStream, h);
  if (!s || !s->release) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "the stream was already released");
    return NULL;
  }
  return s;
}

/* A failed get_schema/get_next as the exception of its errno, with the stream's message. */
void throw_stream(JNIEnv *env, struct ArrowArrayStream *s, int rc, const char *fallback) {
  const char *m = s->get_last_error(s);
  throw_code(env, errno_code(rc), m ? m : fallback);
}

JNIEXPORT jlong JNI(streamSchema)(JNIEnv *env, jclass c, jlong h) {
  (void)c;
  struct ArrowArrayStream *s = live_stream(env, h);
  if (!s) return 0;
  struct ArrowSchema *schema = calloc(1, sizeof *schema);
  if (!schema) {
    throw_code(env, LANCE_ERR_INTERNAL, "out of memory");
    return 0;
  }
  int rc = s->get_schema(s, schema);
  if (rc != 0) {
    throw_stream(env, s, rc, "cannot read the stream's schema");
    free(schema);
    return 0;
  }
  return (jlong)(intptr_t)schema;
}

/* The next batch as a malloc'd ArrowArray owned by Java, or 0 at the end of the stream. */
JNIEXPORT jlong JNI(streamNext)(JNIEnv *env, jclass c, jlong h) {
  (void)c;
  struct ArrowArrayStream *s = live_stream(env, h);
  if (!s) return 0;
  struct ArrowArray *a = calloc(1, sizeof *a);
  if (!a) {
    throw_code(env, LANCE_ERR_INTERNAL, "out of memory");
    return 0;
  }
  int rc = s->get_next(s, a);
  if (rc != 0) {
    throw_stream(env, s, rc, "the stream failed");
    free(a);
    return 0;
  }
  if (!a->release) {
    free(a);
    return 0;
  }
  return (jlong)(intptr_t)a;
}

/* The stream's I/O statistics as an org.lancehost.IoStats (built here: no positional arrays). */
JNIEXPORT jobject JNI(streamIoStats)(JNIEnv *env, jclass c, jlong h) {
  (void)c;
  struct ArrowArrayStream *s = live_stream(env, h);
  if (!s) return NULL;
  LanceIoStats io;
  memset(&io, 0, sizeof io);
  io.struct_size = sizeof io;
  if (!check(env, lance_stream_io_stats_v2(s, &io))) return NULL;
  return (*env)->NewObject(env, g_io_stats, g_io_stats_new, (jlong)io.read_requests, (jlong)io.read_bytes,
                           (jlong)io.index_read_requests, (jlong)io.index_read_bytes, (jlong)io.index_cache_hits,
                           (jlong)io.index_cache_misses, (jlong)io.data_cache_hits, (jlong)io.data_cache_misses,
                           (jlong)io.data_cache_hit_bytes);
}

JNIEXPORT void JNI(streamCancel)(JNIEnv *env, jclass c, jlong h) {
  (void)c;
  check(env, lance_stream_cancel(PTR(struct ArrowArrayStream, h)));
}

JNIEXPORT void JNI(streamRelease)(JNIEnv *env, jclass c, jlong h) {
  (void)env;
  (void)c;
  struct ArrowArrayStream *s = PTR(struct ArrowArrayStream, h);
  if (!s) return;
  if (s->release) s->release(s);
  free(s);
}

JNIEXPORT void JNI(schemaRelease)(JNIEnv *env, jclass c, jlong h) {
  (void)env;
  (void)c;
  struct ArrowSchema *s = PTR(struct ArrowSchema, h);
  if (!s) return;
  if (s->release) s->release(s);
  free(s);
}

JNIEXPORT void JNI(arrayRelease)(JNIEnv *env, jclass c, jlong h) {
  (void)env;
  (void)c;
  struct ArrowArray *a = PTR(struct ArrowArray, h);
  if (!a) return;
  if (a->release) a->release(a);
  free(a);
}
