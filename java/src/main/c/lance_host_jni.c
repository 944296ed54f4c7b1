/* JNI glue of the Java API (org.lancehost.Native) over lance_host.h.
 *
 * This file only maps arguments, errors and ownership: Java strings become NUL-terminated UTF-8
 * (a string holding NUL is refused, it would be cut short), Java arrays become C arrays, a failed
 * call becomes the Java exception of its error code, and every C object handed to Java is a
 * pointer in a `long` that Java frees exactly once through the matching free function here.
 * Arrow streams, schemas and arrays are malloc'd C structs owned by Java until released.
 * Nothing here decides anything about tables: that is the library's job.
 */
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "lance_host.h"

static jclass g_exception;        /* org.lancehost.LanceException */
static jmethodID g_exception_of;  /* static LanceException of(int, String) */
static jclass g_string;           /* java.lang.String */
static jmethodID g_string_bytes;  /* byte[] getBytes(Charset) */
static jmethodID g_string_new;    /* String(byte[], Charset) */
static jobject g_utf8;            /* StandardCharsets.UTF_8 */
static jclass g_byte_array;       /* byte[] */
static jclass g_object;           /* java.lang.Object */
static JavaVM *g_vm;
static jclass g_host_stream;      /* org.lancehost.HostStream */
static jmethodID g_hs_schema;     /* Object[] schemaDescription() */
static jmethodID g_hs_next;       /* long[] nextBatch() */
static jmethodID g_hs_release;    /* void releaseBatch(long) */
static jmethodID g_hs_close;      /* void closeFromNative() */
static jmethodID g_throwable_string; /* String Throwable.toString() */

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
  if (!g_exception_of || !g_string_bytes || !g_string_new || !g_utf8 || !g_hs_schema || !g_hs_next || !g_hs_release ||
      !g_hs_close || !g_throwable_string)
    return JNI_ERR;
  return JNI_VERSION_1_8;
}

/* ---- errors ------------------------------------------------------------------------------ */

static jstring new_string(JNIEnv *env, const char *s);

static void throw_code(JNIEnv *env, int32_t code, const char *message) {
  if ((*env)->ExceptionCheck(env)) return;
  jstring m = new_string(env, message ? message : "");
  if (!m) return;
  jobject ex = (*env)->CallStaticObjectMethod(env, g_exception, g_exception_of, (jint)code, m);
  if (ex && !(*env)->ExceptionCheck(env)) (*env)->Throw(env, (jthrowable)ex);
}

/* The library's error of the call that just failed on this thread. */
static void throw_last(JNIEnv *env) {
  int32_t code = lance_last_error_code();
  throw_code(env, code == LANCE_OK ? LANCE_ERR_INTERNAL : code, lance_last_error_message());
}

static int check(JNIEnv *env, int32_t rc) {
  if (rc == LANCE_OK) return 1;
  throw_last(env);
  return 0;
}

/* A stream's errno, as docs/c-api.md lists them, back to the library's code. */
static int32_t errno_code(int e) {
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

static jstring new_string(JNIEnv *env, const char *s) {
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
static char *utf8(JNIEnv *env, jstring s, const char *what, int *ok) {
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
typedef struct {
  char **items;
  size_t len;
} StrArray;

static void str_array_free(StrArray *a) {
  if (!a->items) return;
  for (size_t i = 0; i < a->len; i++) free(a->items[i]);
  free(a->items);
  a->items = NULL;
}

static int str_array(JNIEnv *env, jobjectArray arr, const char *what, int allow_null_items, StrArray *out) {
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

static jbyteArray bytes_out(JNIEnv *env, const uint8_t *data, size_t len) {
  jbyteArray b = (*env)->NewByteArray(env, (jsize)len);
  if (b && len) (*env)->SetByteArrayRegion(env, b, 0, (jsize)len, (const jbyte *)data);
  return b;
}

/* Library-owned bytes (lance_bytes_free) into a Java byte[]; frees them. */
static jbyteArray take_bytes(JNIEnv *env, uint8_t *data, size_t len) {
  jbyteArray b = bytes_out(env, data, len);
  lance_bytes_free(data, len);
  return b;
}

static jstring take_string(JNIEnv *env, char *s) {
  jstring out = new_string(env, s);
  lance_string_free(s);
  return out;
}

/* A split given as bytes, deserialized for one call. */
static LanceSplit *split_in(JNIEnv *env, jbyteArray bytes) {
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

static struct ArrowArrayStream *new_stream(JNIEnv *env) {
  struct ArrowArrayStream *s = calloc(1, sizeof *s);
  if (!s) throw_code(env, LANCE_ERR_INTERNAL, "out of memory allocating a stream");
  return s;
}

/* The stream `s` filled by a call that returned `rc`: handed to Java, or freed with an error. */
static jlong stream_out(JNIEnv *env, int32_t rc, struct ArrowArrayStream *s) {
  if (!check(env, rc)) {
    free(s);
    return 0;
  }
  return (jlong)(intptr_t)s;
}

/* Java byte[][] as C pointer and length arrays pinned for one call. */
typedef struct {
  jbyteArray *arrays;
  jbyte **ptrs;
  size_t *lens;
  size_t len;
} BytesIn;

static void bytes_in_free(JNIEnv *env, BytesIn *b) {
  for (size_t i = 0; i < b->len; i++) {
    if (b->ptrs && b->ptrs[i]) (*env)->ReleaseByteArrayElements(env, b->arrays[i], b->ptrs[i], JNI_ABORT);
    if (b->arrays && b->arrays[i]) (*env)->DeleteLocalRef(env, b->arrays[i]);
  }
  free(b->arrays);
  free(b->ptrs);
  free(b->lens);
  memset(b, 0, sizeof *b);
}

static int bytes_in(JNIEnv *env, jobjectArray arr, const char *what, BytesIn *out) {
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

#define PTR(T, h) ((T *)(intptr_t)(h))
#define JNI(name) JNICALL Java_org_lancehost_Native_##name

/* ---- library ----------------------------------------------------------------------------- */

JNIEXPORT jstring JNI(version)(JNIEnv *env, jclass c) {
  (void)c;
  return new_string(env, lance_host_version());
}

JNIEXPORT jstring JNI(buildProfile)(JNIEnv *env, jclass c) {
  (void)c;
  return new_string(env, lance_host_build_profile());
}

JNIEXPORT jstring JNI(errorCodeName)(JNIEnv *env, jclass c, jint code) {
  (void)c;
  return new_string(env, lance_error_code_name(code));
}

/* Metrics as alternating name/value strings. */
JNIEXPORT jobjectArray JNI(metrics)(JNIEnv *env, jclass c) {
  (void)c;
  size_t n = lance_metric_count();
  jobjectArray out = (*env)->NewObjectArray(env, (jsize)(2 * n), g_string, NULL);
  for (size_t i = 0; out && i < n; i++) {
    const char *name = NULL;
    uint64_t value = 0;
    if (lance_metric(i, &name, &value) != LANCE_OK) continue;
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)value);
    jstring k = new_string(env, name), v = new_string(env, buf);
    if (!k || !v) return NULL;
    (*env)->SetObjectArrayElement(env, out, (jsize)(2 * i), k);
    (*env)->SetObjectArrayElement(env, out, (jsize)(2 * i + 1), v);
    (*env)->DeleteLocalRef(env, k);
    (*env)->DeleteLocalRef(env, v);
  }
  return out;
}

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
JNIEXPORT jlongArray JNI(datasetVersions)(JNIEnv *env, jclass c, jlong ds) {
  (void)c;
  LanceVersionInfo *list = NULL;
  size_t n = 0;
  if (!check(env, lance_dataset_versions(PTR(LanceDataset, ds), &list, &n))) return NULL;
  jlongArray out = (*env)->NewLongArray(env, (jsize)(2 * n));
  for (size_t i = 0; out && i < n; i++) {
    jlong pair[2] = {(jlong)list[i].version, (jlong)list[i].timestamp_ms};
    (*env)->SetLongArrayRegion(env, out, (jsize)(2 * i), 2, pair);
  }
  lance_version_info_list_free(list, n);
  return out;
}

/* ---- splits ------------------------------------------------------------------------------ */

/* A plan as Object[]{String indexName, String reason, byte[][] splits}. */
static jobjectArray plan_out(JNIEnv *env, LanceSplitPlan *plan) {
  size_t n = lance_split_plan_count(plan);
  jobjectArray splits = (*env)->NewObjectArray(env, (jsize)n, g_byte_array, NULL);
  for (size_t i = 0; splits && i < n; i++) {
    LanceSplit *s = lance_split_plan_get(plan, i);
    uint8_t *bytes = NULL;
    size_t len = 0;
    int32_t rc = s ? lance_split_serialize(s, &bytes, &len) : lance_last_error_code();
    if (s) lance_split_free(s);
    if (rc != LANCE_OK) {
      throw_last(env);
      splits = NULL;
      break;
    }
    jbyteArray b = take_bytes(env, bytes, len);
    if (!b) { splits = NULL; break; }
    (*env)->SetObjectArrayElement(env, splits, (jsize)i, b);
    (*env)->DeleteLocalRef(env, b);
  }
  jobjectArray out = NULL;
  if (splits) {
    jstring index = new_string(env, lance_split_plan_index_name(plan));
    jstring reason = new_string(env, lance_split_plan_reason(plan));
    out = (*env)->NewObjectArray(env, 3, g_object, NULL);
    if (out) {
      (*env)->SetObjectArrayElement(env, out, 0, index);
      (*env)->SetObjectArrayElement(env, out, 1, reason);
      (*env)->SetObjectArrayElement(env, out, 2, splits);
    }
  }
  lance_split_plan_free(plan);
  return out;
}

JNIEXPORT jobjectArray JNI(planScan)(JNIEnv *env, jclass c, jlong ds, jlong target_rows, jboolean slices) {
  (void)c;
  LanceSplitPlan *plan = NULL;
  int32_t rc = slices ? lance_dataset_plan_scan_slices(PTR(LanceDataset, ds), (uint64_t)target_rows, &plan)
                      : lance_dataset_plan_scan(PTR(LanceDataset, ds), (uint64_t)target_rows, &plan);
  if (!check(env, rc)) return NULL;
  return plan_out(env, plan);
}

JNIEXPORT jobjectArray JNI(planVectorSearch)(JNIEnv *env, jclass c, jlong ds, jstring column, jint metric,
                                             jboolean use_index, jlong flat_target_rows) {
  (void)c;
  int ok = 1;
  char *col = utf8(env, column, "column", &ok);
  if (!ok) return NULL;
  LanceSplitPlan *plan = NULL;
  int32_t rc = lance_dataset_plan_vector_search(PTR(LanceDataset, ds), col, metric, use_index,
                                                (uint64_t)flat_target_rows, &plan);
  free(col);
  if (!check(env, rc)) return NULL;
  return plan_out(env, plan);
}

/* Split facts as long[]{kind, version, row_count, slice_offset, slice_count (-1 = none)}. */
JNIEXPORT jlongArray JNI(splitInfo)(JNIEnv *env, jclass c, jbyteArray split) {
  (void)c;
  LanceSplit *s = split_in(env, split);
  if (!s) return NULL;
  uint64_t off = 0, cnt = 0;
  int has_slice = lance_split_row_slice(s, &off, &cnt) == 1;
  jlong v[5] = {lance_split_kind(s), (jlong)lance_split_version(s), (jlong)lance_split_row_count(s),
                has_slice ? (jlong)off : -1, has_slice ? (jlong)cnt : -1};
  lance_split_free(s);
  jlongArray out = (*env)->NewLongArray(env, 5);
  if (out) (*env)->SetLongArrayRegion(env, out, 0, 5, v);
  return out;
}

/* ---- scans ------------------------------------------------------------------------------- */

/* The strings a scan's options point at (freed with scan_strings_free). */
typedef struct {
  StrArray cols;
  char *filter, *order_by, *key_column;
  StrArray keys; /* the runtime key set as text (NULL items: NULL keys) */
} ScanStrings;

static void scan_strings_free(ScanStrings *t) {
  free(t->filter);
  free(t->order_by);
  free(t->key_column);
  str_array_free(&t->cols);
  str_array_free(&t->keys);
}

static int scan_options(JNIEnv *env, LanceScanOptions *o, ScanStrings *t, jobjectArray columns, jstring filter_sql,
                        jlong limit, jlong offset, jlong batch_size, jboolean with_row_id, jstring order_by,
                        jstring key_column, jobjectArray keys) {
  lance_scan_options_init_v2(o, sizeof *o);
  memset(t, 0, sizeof *t);
  int ok = 1;
  t->filter = utf8(env, filter_sql, "filter", &ok);
  if (ok) t->order_by = utf8(env, order_by, "order by", &ok);
  if (ok) t->key_column = utf8(env, key_column, "key column", &ok);
  if (!ok || !str_array(env, columns, "columns", 0, &t->cols) || !str_array(env, keys, "keys", 1, &t->keys)) {
    scan_strings_free(t);
    return 0;
  }
  if (t->key_column) {
    o->key_filter_column = t->key_column;
    o->key_filter_texts = (const char *const *)t->keys.items;
    o->num_key_filter_texts = t->keys.len;
  }
  o->order_by = t->order_by;
  o->columns = (const char *const *)t->cols.items;
  o->num_columns = t->cols.len;
  o->filter_sql = t->filter;
  o->limit = limit;
  o->offset = offset;
  o->batch_size = (uint64_t)batch_size;
  o->with_row_id = with_row_id;
  return 1;
}

JNIEXPORT jlong JNI(scan)(JNIEnv *env, jclass c, jlong ds, jbyteArray split, jobjectArray columns, jstring filter_sql,
                          jlong limit, jlong offset, jlong batch_size, jboolean with_row_id, jstring order_by,
                          jstring key_column, jobjectArray keys, jlong dynamic_filter) {
  (void)c;
  LanceScanOptions o;
  ScanStrings t;
  if (!scan_options(env, &o, &t, columns, filter_sql, limit, offset, batch_size, with_row_id, order_by, key_column,
                    keys))
    return 0;
  o.dynamic_filter = PTR(LanceDynamicFilter, dynamic_filter);
  jlong out = 0;
  LanceSplit *s = NULL;
  if (!split || (s = split_in(env, split))) {
    struct ArrowArrayStream *stream = new_stream(env);
    if (stream) {
      int32_t rc = s ? lance_split_scan_v2(PTR(LanceDataset, ds), s, &o, stream)
                     : lance_dataset_scan_v2(PTR(LanceDataset, ds), &o, stream);
      out = stream_out(env, rc, stream);
    }
  }
  if (s) lance_split_free(s);
  scan_strings_free(&t);
  return out;
}

/* ---- dynamic filters ----------------------------------------------------------------------- */

JNIEXPORT jlong JNI(dynamicFilterNew)(JNIEnv *env, jclass c, jlong ds, jobjectArray columns) {
  (void)c;
  StrArray cols;
  if (!str_array(env, columns, "columns", 0, &cols)) return 0;
  LanceDynamicFilter *f = NULL;
  jlong out = 0;
  if (check(env, lance_dynamic_filter_new(PTR(LanceDataset, ds), (const char *const *)cols.items, cols.len, &f)))
    out = (jlong)(intptr_t)f;
  str_array_free(&cols);
  return out;
}

JNIEXPORT void JNI(dynamicFilterSetSql)(JNIEnv *env, jclass c, jlong f, jstring sql) {
  (void)c;
  int ok = 1;
  char *text = utf8(env, sql, "sql", &ok);
  if (ok) check(env, lance_dynamic_filter_set_sql(PTR(LanceDynamicFilter, f), text));
  free(text);
}

/* A utf8 Arrow array over key texts, owning one malloc'd block (NULL items: NULL keys). */
typedef struct {
  const void *buffers[3];
  uint8_t *validity;
  int32_t *offsets;
  char *data;
} KeyTexts;

static void key_texts_release(struct ArrowArray *a) {
  KeyTexts *k = (KeyTexts *)a->private_data;
  free(k->validity);
  free(k->offsets);
  free(k->data);
  free(k);
  a->release = NULL;
}

static int key_texts_array(const StrArray *keys, struct ArrowArray *a) {
  KeyTexts *k = calloc(1, sizeof *k);
  size_t total = 0;
  for (size_t i = 0; i < keys->len; i++) total += keys->items[i] ? strlen(keys->items[i]) : 0;
  if (!k || total > INT32_MAX) {
    free(k);
    return 0;
  }
  k->validity = calloc(keys->len / 8 + 1, 1);
  k->offsets = malloc(sizeof(int32_t) * (keys->len + 1));
  k->data = malloc(total + 1);
  if (!k->validity || !k->offsets || !k->data) {
    free(k->validity);
    free(k->offsets);
    free(k->data);
    free(k);
    return 0;
  }
  int64_t nulls = 0;
  size_t at = 0;
  k->offsets[0] = 0;
  for (size_t i = 0; i < keys->len; i++) {
    if (keys->items[i]) {
      size_t n = strlen(keys->items[i]);
      memcpy(k->data + at, keys->items[i], n);
      at += n;
      k->validity[i / 8] |= (uint8_t)(1u << (i % 8));
    } else {
      nulls++;
    }
    k->offsets[i + 1] = (int32_t)at;
  }
  k->buffers[0] = k->validity;
  k->buffers[1] = k->offsets;
  k->buffers[2] = k->data;
  memset(a, 0, sizeof *a);
  a->length = (int64_t)keys->len;
  a->null_count = nulls;
  a->n_buffers = 3;
  a->buffers = k->buffers;
  a->release = key_texts_release;
  a->private_data = k;
  return 1;
}

JNIEXPORT void JNI(dynamicFilterSetKeys)(JNIEnv *env, jclass c, jlong f, jstring column, jobjectArray keys) {
  (void)c;
  int ok = 1;
  char *col = utf8(env, column, "column", &ok);
  StrArray texts;
  if (!ok || !str_array(env, keys, "keys", 1, &texts)) {
    free(col);
    return;
  }
  struct ArrowArray array;
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  schema.format = "u";
  schema.name = "";
  schema.flags = ARROW_FLAG_NULLABLE;
  if (!key_texts_array(&texts, &array)) {
    throw_code(env, LANCE_ERR_INTERNAL, "out of memory for the dynamic filter's keys");
  } else {
    check(env, lance_dynamic_filter_set_keys(PTR(LanceDynamicFilter, f), col, &array, &schema));
    if (array.release) array.release(&array); /* moved unless the call failed before reading it */
  }
  str_array_free(&texts);
  free(col);
}

JNIEXPORT jlong JNI(dynamicFilterGeneration)(JNIEnv *env, jclass c, jlong f) {
  (void)c;
  uint64_t n = 0;
  check(env, lance_dynamic_filter_generation(PTR(LanceDynamicFilter, f), &n));
  return (jlong)n;
}

JNIEXPORT void JNI(dynamicFilterFree)(JNIEnv *env, jclass c, jlong f) {
  (void)env;
  (void)c;
  lance_dynamic_filter_free(PTR(LanceDynamicFilter, f));
}

JNIEXPORT jstring JNI(explainScan)(JNIEnv *env, jclass c, jlong ds, jobjectArray columns, jstring filter_sql,
                                   jlong limit, jlong offset, jstring order_by, jstring key_column, jobjectArray keys) {
  (void)c;
  LanceScanOptions o;
  ScanStrings t;
  if (!scan_options(env, &o, &t, columns, filter_sql, limit, offset, 0, JNI_FALSE, order_by, key_column, keys))
    return NULL;
  char *text = NULL;
  jstring out = NULL;
  if (check(env, lance_dataset_explain_scan_v2(PTR(LanceDataset, ds), &o, &text))) out = take_string(env, text);
  scan_strings_free(&t);
  return out;
}

JNIEXPORT jlong JNI(takeRows)(JNIEnv *env, jclass c, jlong ds, jlongArray row_ids, jobjectArray columns) {
  (void)c;
  if (!row_ids) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "row ids are null");
    return 0;
  }
  StrArray cols;
  if (!str_array(env, columns, "columns", 0, &cols)) return 0;
  jsize n = (*env)->GetArrayLength(env, row_ids);
  jlong *ids = (*env)->GetLongArrayElements(env, row_ids, NULL);
  jlong out = 0;
  if (ids) {
    struct ArrowArrayStream *stream = new_stream(env);
    if (stream) {
      int32_t rc = lance_dataset_take_rows(PTR(LanceDataset, ds), (const uint64_t *)ids, (size_t)n,
                                           (const char *const *)cols.items, cols.len, stream);
      out = stream_out(env, rc, stream);
    }
    (*env)->ReleaseLongArrayElements(env, row_ids, ids, JNI_ABORT);
  }
  str_array_free(&cols);
  return out;
}

/* ---- vector search ----------------------------------------------------------------------- */

JNIEXPORT jlong JNI(splitSearch)(JNIEnv *env, jclass c, jlong ds, jbyteArray split, jstring column, jfloatArray vector,
                                 jlong k, jint metric, jint nprobes, jint refine_factor, jstring prefilter,
                                 jobjectArray columns, jboolean with_row_id) {
  (void)c;
  if (!vector) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "query vector is null");
    return 0;
  }
  int ok = 1;
  char *col = utf8(env, column, "column", &ok);
  if (!ok) return 0;
  char *pre = utf8(env, prefilter, "prefilter", &ok);
  if (!ok) {
    free(col);
    return 0;
  }
  StrArray cols;
  if (!str_array(env, columns, "columns", 0, &cols)) {
    free(col);
    free(pre);
    return 0;
  }
  jlong out = 0;
  LanceSplit *s = split_in(env, split);
  jsize dim = (*env)->GetArrayLength(env, vector);
  jfloat *v = s ? (*env)->GetFloatArrayElements(env, vector, NULL) : NULL;
  if (v) {
    LanceVectorQuery q;
    lance_vector_query_init_v2(&q, sizeof q);
    q.column = col;
    q.vector = v;
    q.dimension = (size_t)dim;
    q.element_type = LANCE_ELEMENT_F32;
    q.k = (uint64_t)k;
    q.metric = metric;
    q.nprobes = (uint32_t)nprobes;
    q.refine_factor = (uint32_t)refine_factor;
    q.prefilter_sql = pre;
    q.columns = (const char *const *)cols.items;
    q.num_columns = cols.len;
    q.with_row_id = with_row_id;
    struct ArrowArrayStream *stream = new_stream(env);
    if (stream) out = stream_out(env, lance_split_search_v2(PTR(LanceDataset, ds), s, &q, stream), stream);
    (*env)->ReleaseFloatArrayElements(env, vector, v, JNI_ABORT);
  }
  if (s) lance_split_free(s);
  str_array_free(&cols);
  free(col);
  free(pre);
  return out;
}

/* Streams given to a merge as long[]: each is consumed by the call (released, then freed here),
 * whether it succeeds or not, as lance_topk_merge/lance_aggregate_merge consume them. */
static struct ArrowArrayStream *streams_in(JNIEnv *env, jlongArray handles, jsize *n) {
  *n = handles ? (*env)->GetArrayLength(env, handles) : 0;
  struct ArrowArrayStream *arr = calloc((size_t)*n + 1, sizeof *arr);
  if (!arr) {
    throw_code(env, LANCE_ERR_INTERNAL, "out of memory");
    return NULL;
  }
  for (jsize i = 0; i < *n; i++) {
    jlong h;
    (*env)->GetLongArrayRegion(env, handles, i, 1, &h);
    struct ArrowArrayStream *s = PTR(struct ArrowArrayStream, h);
    if (s) {
      arr[i] = *s; /* moved: the C struct now lives in `arr` */
      memset(s, 0, sizeof *s);
      free(s);
    }
  }
  return arr;
}

static void streams_release(struct ArrowArrayStream *arr, jsize n) {
  for (jsize i = 0; i < n; i++)
    if (arr[i].release) arr[i].release(&arr[i]);
  free(arr);
}

/* The three merges share their ownership rules: the input streams are consumed, the output is a
 * new stream handed to Java. */
enum MergeKind { MERGE_TOPK, MERGE_TEXT, MERGE_AGGREGATE };

static jlong merge(JNIEnv *env, jlongArray streams, enum MergeKind kind, jlong k, jlong offset) {
  jsize n;
  struct ArrowArrayStream *in = streams_in(env, streams, &n);
  if (!in) return 0;
  jlong out = 0;
  struct ArrowArrayStream *stream = new_stream(env);
  if (stream) {
    int32_t rc = kind == MERGE_TOPK   ? lance_topk_merge(in, (size_t)n, (uint64_t)k, (uint64_t)offset, stream)
                 : kind == MERGE_TEXT ? lance_fts_merge(in, (size_t)n, (uint64_t)k, (uint64_t)offset, stream)
                                      : lance_aggregate_merge(in, (size_t)n, stream);
    out = stream_out(env, rc, stream);
  }
  streams_release(in, n);
  return out;
}

JNIEXPORT jlong JNI(topkMerge)(JNIEnv *env, jclass c, jlongArray streams, jlong k, jlong offset) {
  (void)c;
  return merge(env, streams, MERGE_TOPK, k, offset);
}

/* ---- aggregates -------------------------------------------------------------------------- */

JNIEXPORT jlong JNI(aggregate)(JNIEnv *env, jclass c, jlong ds, jbyteArray split, jobjectArray group_by, jintArray functions,
                               jobjectArray columns, jobjectArray aliases, jstring filter_sql) {
  (void)c;
  if (!functions) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "aggregate functions are null");
    return 0;
  }
  StrArray g, cols, names;
  if (!str_array(env, group_by, "group by", 0, &g)) return 0;
  if (!str_array(env, columns, "aggregate columns", 1, &cols)) {
    str_array_free(&g);
    return 0;
  }
  if (!str_array(env, aliases, "aggregate names", 1, &names)) {
    str_array_free(&g);
    str_array_free(&cols);
    return 0;
  }
  int ok = 1;
  char *filter = utf8(env, filter_sql, "filter", &ok);
  jlong out = 0;
  jsize nf = (*env)->GetArrayLength(env, functions);
  if (ok && ((columns && cols.len != (size_t)nf) || (aliases && names.len != (size_t)nf))) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "aggregate functions, columns and names differ in length");
    ok = 0;
  }
  LanceSplit *s = NULL;
  if (ok && split && !(s = split_in(env, split))) ok = 0;
  jint *fns = ok ? (*env)->GetIntArrayElements(env, functions, NULL) : NULL;
  if (fns) {
    LanceAggregateSpec spec;
    lance_aggregate_init_v2(&spec, sizeof spec);
    spec.group_by = (const char *const *)g.items;
    spec.num_group_by = g.len;
    spec.functions = (const int32_t *)fns;
    spec.columns = (const char *const *)cols.items;
    spec.aliases = (const char *const *)names.items;
    spec.num_aggregates = (size_t)nf;
    spec.filter_sql = filter;
    struct ArrowArrayStream *stream = new_stream(env);
    if (stream) {
      int32_t rc = s ? lance_dataset_aggregate_split(PTR(LanceDataset, ds), s, &spec, stream, NULL)
                     : lance_dataset_aggregate(PTR(LanceDataset, ds), &spec, stream, NULL);
      out = stream_out(env, rc, stream);
    }
    (*env)->ReleaseIntArrayElements(env, functions, fns, JNI_ABORT);
  }
  if (s) lance_split_free(s);
  free(filter);
  str_array_free(&g);
  str_array_free(&cols);
  str_array_free(&names);
  return out;
}

JNIEXPORT jlong JNI(aggregateMerge)(JNIEnv *env, jclass c, jlongArray streams) {
  (void)c;
  return merge(env, streams, MERGE_AGGREGATE, 0, 0);
}

/* ---- catalogs --------------------------------------------------------------------------- */

static jclass string_array_class(JNIEnv *env) {
  return (*env)->FindClass(env, "[Ljava/lang/String;");
}

static jobjectArray strings_out(JNIEnv *env, size_t n, const char *(*get)(const void *, size_t), const void *obj) {
  jobjectArray out = (*env)->NewObjectArray(env, (jsize)n, g_string, NULL);
  for (size_t i = 0; out && i < n; i++) {
    jstring s = new_string(env, get(obj, i));
    if (!s) return NULL;
    (*env)->SetObjectArrayElement(env, out, (jsize)i, s);
    (*env)->DeleteLocalRef(env, s);
  }
  return out;
}

static const char *string_list_get(const void *l, size_t i) {
  return lance_string_list_get((const LanceStringList *)l, i);
}

JNIEXPORT jlong JNI(catalogOpen)(JNIEnv *env, jclass c, jobjectArray properties) {
  (void)c;
  StrArray p;
  if (!str_array(env, properties, "catalog properties", 0, &p)) return 0;
  LanceCatalog *cat = lance_catalog_open((const char *const *)p.items);
  str_array_free(&p);
  if (!cat) throw_last(env);
  return (jlong)(intptr_t)cat;
}

JNIEXPORT void JNI(catalogFree)(JNIEnv *env, jclass c, jlong h) {
  (void)env;
  (void)c;
  lance_catalog_free(PTR(LanceCatalog, h));
}

/* Namespaces as String[][] (each a path of name parts). */
JNIEXPORT jobjectArray JNI(catalogListNamespaces)(JNIEnv *env, jclass c, jlong h, jobjectArray ns, jboolean recursive) {
  (void)c;
  StrArray n;
  if (!str_array(env, ns, "namespace", 0, &n)) return NULL;
  LanceNamespaceList *list = NULL;
  jobjectArray out = NULL;
  if (check(env, lance_catalog_list_namespaces(PTR(LanceCatalog, h), (const char *const *)n.items, n.len, recursive, &list))) {
    size_t count = lance_namespace_list_count(list);
    jclass sa = string_array_class(env);
    out = sa ? (*env)->NewObjectArray(env, (jsize)count, sa, NULL) : NULL;
    for (size_t i = 0; out && i < count; i++) {
      size_t depth = lance_namespace_list_depth(list, i);
      jobjectArray path = (*env)->NewObjectArray(env, (jsize)depth, g_string, NULL);
      for (size_t j = 0; path && j < depth; j++) {
        jstring part = new_string(env, lance_namespace_list_part(list, i, j));
        if (!part) { path = NULL; break; }
        (*env)->SetObjectArrayElement(env, path, (jsize)j, part);
        (*env)->DeleteLocalRef(env, part);
      }
      if (!path) { out = NULL; break; }
      (*env)->SetObjectArrayElement(env, out, (jsize)i, path);
      (*env)->DeleteLocalRef(env, path);
    }
    lance_namespace_list_free(list);
  }
  str_array_free(&n);
  return out;
}

JNIEXPORT jobjectArray JNI(catalogListTables)(JNIEnv *env, jclass c, jlong h, jobjectArray ns) {
  (void)c;
  StrArray n;
  if (!str_array(env, ns, "namespace", 0, &n)) return NULL;
  LanceStringList *list = NULL;
  jobjectArray out = NULL;
  if (check(env, lance_catalog_list_tables(PTR(LanceCatalog, h), (const char *const *)n.items, n.len, &list))) {
    out = strings_out(env, lance_string_list_count(list), string_list_get, list);
    lance_string_list_free(list);
  }
  str_array_free(&n);
  return out;
}

/* Object[]{String location, String[] storage options (key, value, ...), Long latest version}. */
JNIEXPORT jobjectArray JNI(catalogDescribeTable)(JNIEnv *env, jclass c, jlong h, jobjectArray ns, jstring table) {
  (void)c;
  int ok = 1;
  char *t = utf8(env, table, "table", &ok);
  if (!ok) return NULL;
  StrArray n;
  if (!str_array(env, ns, "namespace", 0, &n)) {
    free(t);
    return NULL;
  }
  LanceTableInfo *info = NULL;
  jobjectArray out = NULL;
  if (check(env, lance_catalog_describe_table(PTR(LanceCatalog, h), (const char *const *)n.items, n.len, t, &info))) {
    const char *const *opts = lance_table_info_storage_options(info);
    size_t count = 0;
    while (opts && opts[count]) count++;
    jobjectArray o = (*env)->NewObjectArray(env, (jsize)count, g_string, NULL);
    for (size_t i = 0; o && i < count; i++) {
      jstring s = new_string(env, opts[i]);
      if (!s) { o = NULL; break; }
      (*env)->SetObjectArrayElement(env, o, (jsize)i, s);
      (*env)->DeleteLocalRef(env, s);
    }
    jstring loc = new_string(env, lance_table_info_location(info));
    jclass long_class = (*env)->FindClass(env, "java/lang/Long");
    jmethodID value_of = long_class ? (*env)->GetStaticMethodID(env, long_class, "valueOf", "(J)Ljava/lang/Long;") : NULL;
    jobject latest = value_of ? (*env)->CallStaticObjectMethod(env, long_class, value_of,
                                                               (jlong)lance_table_info_latest_version(info)) : NULL;
    if (o && loc && latest) {
      out = (*env)->NewObjectArray(env, 3, g_object, NULL);
      if (out) {
        (*env)->SetObjectArrayElement(env, out, 0, loc);
        (*env)->SetObjectArrayElement(env, out, 1, o);
        (*env)->SetObjectArrayElement(env, out, 2, latest);
      }
    }
    lance_table_info_free(info);
  }
  str_array_free(&n);
  free(t);
  return out;
}

JNIEXPORT jlong JNI(catalogOpenTable)(JNIEnv *env, jclass c, jlong h, jobjectArray ns, jstring table, jlong version) {
  (void)c;
  int ok = 1;
  char *t = utf8(env, table, "table", &ok);
  if (!ok) return 0;
  StrArray n;
  if (!str_array(env, ns, "namespace", 0, &n)) {
    free(t);
    return 0;
  }
  LanceDataset *d = lance_catalog_open_table(PTR(LanceCatalog, h), (const char *const *)n.items, n.len, t, (uint64_t)version);
  if (!d) throw_last(env);
  str_array_free(&n);
  free(t);
  return (jlong)(intptr_t)d;
}

JNIEXPORT void JNI(catalogCreateNamespace)(JNIEnv *env, jclass c, jlong h, jobjectArray ns, jboolean exist_ok,
                                           jobjectArray properties) {
  (void)c;
  StrArray n, p;
  if (!str_array(env, ns, "namespace", 0, &n)) return;
  if (str_array(env, properties, "namespace properties", 0, &p)) {
    check(env, lance_catalog_create_namespace(PTR(LanceCatalog, h), (const char *const *)n.items, n.len, exist_ok,
                                              (const char *const *)p.items));
    str_array_free(&p);
  }
  str_array_free(&n);
}

JNIEXPORT void JNI(catalogDropNamespace)(JNIEnv *env, jclass c, jlong h, jobjectArray ns, jboolean cascade,
                                         jboolean missing_ok) {
  (void)c;
  StrArray n;
  if (!str_array(env, ns, "namespace", 0, &n)) return;
  check(env, lance_catalog_drop_namespace(PTR(LanceCatalog, h), (const char *const *)n.items, n.len, cascade, missing_ok));
  str_array_free(&n);
}

JNIEXPORT void JNI(catalogDropTable)(JNIEnv *env, jclass c, jlong h, jobjectArray ns, jstring table, jboolean missing_ok) {
  (void)c;
  int ok = 1;
  char *t = utf8(env, table, "table", &ok);
  if (!ok) return;
  StrArray n;
  if (str_array(env, ns, "namespace", 0, &n)) {
    check(env, lance_catalog_drop_table(PTR(LanceCatalog, h), (const char *const *)n.items, n.len, t, missing_ok));
    str_array_free(&n);
  }
  free(t);
}


/* ---- host streams: Java batches exported to the library ---------------------------------- */

/* The library reads a host stream on its own threads: those are attached to the JVM (as
 * daemons, so they never keep it alive) the first time they call back into Java. */
static JNIEnv *attached_env(void) {
  JNIEnv *env = NULL;
  jint rc = (*g_vm)->GetEnv(g_vm, (void **)&env, JNI_VERSION_1_8);
  if (rc == JNI_EDETACHED && (*g_vm)->AttachCurrentThreadAsDaemon(g_vm, (void **)&env, NULL) != JNI_OK) return NULL;
  if (rc != JNI_OK && rc != JNI_EDETACHED) return NULL;
  return env;
}

/* The pending Java exception as a malloc'd message (cleared); NULL when none. */
static char *take_exception(JNIEnv *env) {
  jthrowable t = (*env)->ExceptionOccurred(env);
  if (!t) return NULL;
  (*env)->ExceptionClear(env);
  jstring m = (jstring)(*env)->CallObjectMethod(env, t, g_throwable_string);
  char *out = NULL;
  if (m && !(*env)->ExceptionCheck(env)) {
    int ok = 1;
    out = utf8(env, m, "message", &ok);
  }
  (*env)->ExceptionClear(env);
  return out ? out : strdup("the Java stream failed");
}

typedef struct {
  jobject source; /* global ref to the HostStream */
  char *error;
} HostStreamPrivate;

/* Schema nodes in pre-order, from HostStream.schemaDescription():
 * Object[]{String[] formats, String[] names, long[] flags, int[] children}. */
typedef struct {
  char **formats;
  char **names;
  jlong *flags;
  jint *children;
  jsize n;
  jsize next;
} SchemaDesc;

static void schema_release(struct ArrowSchema *s) {
  if (!s->release) return;
  for (int64_t i = 0; i < s->n_children; i++) {
    if (s->children[i]->release) s->children[i]->release(s->children[i]);
    free(s->children[i]);
  }
  free(s->children);
  free((void *)s->format);
  free((void *)s->name);
  s->release = NULL;
}

static int build_schema(SchemaDesc *d, struct ArrowSchema *out) {
  if (d->next >= d->n) return 0;
  jsize i = d->next++;
  memset(out, 0, sizeof *out);
  out->format = d->formats[i];
  out->name = d->names[i];
  d->formats[i] = NULL;
  d->names[i] = NULL;
  out->flags = d->flags[i];
  out->release = schema_release;
  out->n_children = d->children[i];
  if (out->n_children > 0) {
    out->children = calloc((size_t)out->n_children, sizeof(struct ArrowSchema *));
    if (!out->children) return 0;
    for (int64_t c = 0; c < out->n_children; c++) {
      out->children[c] = calloc(1, sizeof(struct ArrowSchema));
      if (!out->children[c] || !build_schema(d, out->children[c])) {
        out->n_children = c + (out->children[c] ? 1 : 0);
        return 0;
      }
    }
  }
  return 1;
}

static int hs_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  HostStreamPrivate *p = s->private_data;
  JNIEnv *env = attached_env();
  if (!env) return 5;
  jobjectArray desc = (jobjectArray)(*env)->CallObjectMethod(env, p->source, g_hs_schema);
  char *err = take_exception(env);
  if (err || !desc) {
    free(p->error);
    p->error = err ? err : strdup("the Java stream gave no schema");
    return 5;
  }
  jobjectArray formats = (jobjectArray)(*env)->GetObjectArrayElement(env, desc, 0);
  jobjectArray names = (jobjectArray)(*env)->GetObjectArrayElement(env, desc, 1);
  jlongArray flags = (jlongArray)(*env)->GetObjectArrayElement(env, desc, 2);
  jintArray children = (jintArray)(*env)->GetObjectArrayElement(env, desc, 3);
  StrArray f = {0}, nm = {0};
  SchemaDesc d = {0};
  int ok = str_array(env, formats, "formats", 0, &f) && str_array(env, names, "names", 0, &nm);
  d.n = (jsize)f.len;
  if (ok && (nm.len != f.len || (*env)->GetArrayLength(env, flags) != d.n || (*env)->GetArrayLength(env, children) != d.n))
    ok = 0;
  if (ok) {
    d.formats = f.items;
    d.names = nm.items;
    d.flags = calloc((size_t)d.n + 1, sizeof(jlong));
    d.children = calloc((size_t)d.n + 1, sizeof(jint));
    if (d.flags && d.children) {
      (*env)->GetLongArrayRegion(env, flags, 0, d.n, d.flags);
      (*env)->GetIntArrayRegion(env, children, 0, d.n, d.children);
      memset(out, 0, sizeof *out);
      ok = build_schema(&d, out) && d.next == d.n;
      if (!ok && out->release) out->release(out);
    } else {
      ok = 0;
    }
  }
  free(d.flags);
  free(d.children);
  str_array_free(&f); /* strings moved into the schema are NULL here */
  str_array_free(&nm);
  if (!ok) {
    char *e = take_exception(env);
    free(p->error);
    p->error = e ? e : strdup("the Java stream gave a malformed schema");
    return 22;
  }
  return 0;
}

/* A batch's C tree: one allocation per node; the root's release frees them all and hands the
 * batch back to Java (HostStream.releaseBatch), which closes its vectors. */
typedef struct {
  jobject source; /* global ref, root only */
  jlong id;
} BatchPrivate;

static void array_free_tree(struct ArrowArray *a) {
  for (int64_t i = 0; i < a->n_children; i++) {
    array_free_tree(a->children[i]);
    free(a->children[i]);
  }
  free(a->children);
  free((void *)a->buffers);
}

static void child_release(struct ArrowArray *a) {
  a->release = NULL; /* the root owns the tree */
}

static void root_release(struct ArrowArray *a) {
  if (!a->release) return;
  BatchPrivate *bp = a->private_data;
  array_free_tree(a);
  JNIEnv *env = attached_env();
  if (env && bp) {
    (*env)->CallVoidMethod(env, bp->source, g_hs_release, bp->id);
    (*env)->ExceptionClear(env);
    (*env)->DeleteGlobalRef(env, bp->source);
  }
  free(bp);
  a->release = NULL;
}

/* Nodes in pre-order: length, null_count, n_buffers, buffer addresses..., n_children. */
static int build_array(const jlong *v, jsize n, jsize *pos, struct ArrowArray *out) {
  if (*pos + 3 > n) return 0;
  memset(out, 0, sizeof *out);
  out->length = v[(*pos)++];
  out->null_count = v[(*pos)++];
  out->n_buffers = v[(*pos)++];
  out->release = child_release;
  if (out->n_buffers < 0 || *pos + out->n_buffers + 1 > n) return 0;
  out->buffers = calloc((size_t)out->n_buffers + 1, sizeof(void *));
  if (!out->buffers) return 0;
  for (int64_t b = 0; b < out->n_buffers; b++) out->buffers[b] = (const void *)(intptr_t)v[(*pos)++];
  int64_t nc = v[(*pos)++];
  if (nc < 0) return 0;
  if (nc > 0) {
    out->children = calloc((size_t)nc, sizeof(struct ArrowArray *));
    if (!out->children) return 0;
    for (int64_t c = 0; c < nc; c++) {
      out->children[c] = calloc(1, sizeof(struct ArrowArray));
      out->n_children = c + 1;
      if (!out->children[c] || !build_array(v, n, pos, out->children[c])) return 0;
    }
  }
  return 1;
}

static int hs_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  HostStreamPrivate *p = s->private_data;
  JNIEnv *env = attached_env();
  if (!env) return 5;
  jlongArray nodes = (jlongArray)(*env)->CallObjectMethod(env, p->source, g_hs_next);
  char *err = take_exception(env);
  if (err) {
    free(p->error);
    p->error = err;
    return 5;
  }
  if (!nodes) {
    memset(out, 0, sizeof *out); /* the end: release == NULL */
    return 0;
  }
  jsize n = (*env)->GetArrayLength(env, nodes);
  jlong *v = (*env)->GetLongArrayElements(env, nodes, NULL);
  if (!v || n < 1) return 5;
  jlong id = v[0];
  jsize pos = 1;
  int ok = build_array(v, n, &pos, out) && pos == n;
  (*env)->ReleaseLongArrayElements(env, nodes, v, JNI_ABORT);
  BatchPrivate *bp = ok ? calloc(1, sizeof *bp) : NULL;
  if (bp) {
    bp->source = (*env)->NewGlobalRef(env, p->source);
    bp->id = id;
    out->private_data = bp;
    out->release = root_release;
    return 0;
  }
  array_free_tree(out);
  (*env)->CallVoidMethod(env, p->source, g_hs_release, id);
  (*env)->ExceptionClear(env);
  free(p->error);
  p->error = strdup("the Java stream gave a malformed batch");
  return 22;
}

static const char *hs_get_last_error(struct ArrowArrayStream *s) {
  return ((HostStreamPrivate *)s->private_data)->error;
}

static void hs_release(struct ArrowArrayStream *s) {
  if (!s->release) return;
  HostStreamPrivate *p = s->private_data;
  JNIEnv *env = attached_env();
  if (env) {
    (*env)->CallVoidMethod(env, p->source, g_hs_close);
    (*env)->ExceptionClear(env);
    (*env)->DeleteGlobalRef(env, p->source);
  }
  free(p->error);
  free(p);
  s->release = NULL;
}

static int host_stream(JNIEnv *env, jobject source, struct ArrowArrayStream *out) {
  memset(out, 0, sizeof *out);
  if (!source) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "the data stream is null");
    return 0;
  }
  HostStreamPrivate *p = calloc(1, sizeof *p);
  if (!p) {
    throw_code(env, LANCE_ERR_INTERNAL, "out of memory");
    return 0;
  }
  p->source = (*env)->NewGlobalRef(env, source);
  out->get_schema = hs_get_schema;
  out->get_next = hs_get_next;
  out->get_last_error = hs_get_last_error;
  out->release = hs_release;
  out->private_data = p;
  return 1;
}

/* Write parameters shared by the write entry points. */
typedef struct {
  LanceWriteParams p;
  char *sid, *msg;
  StrArray opts, required;
} WriteIn;

static int write_in(JNIEnv *env, WriteIn *w, jint mode, jstring statement_id, jstring message, jobjectArray options,
                    jlong max_rows_per_file) {
  memset(w, 0, sizeof *w);
  lance_write_params_init_v2(&w->p, sizeof w->p);
  int ok = 1;
  w->sid = utf8(env, statement_id, "statement id", &ok);
  if (ok) w->msg = utf8(env, message, "commit message", &ok);
  if (ok) ok = str_array(env, options, "storage options", 0, &w->opts);
  w->p.mode = mode;
  w->p.statement_id = w->sid;
  w->p.commit_message = w->msg;
  w->p.storage_options = (const char *const *)w->opts.items;
  w->p.max_rows_per_file = (uint64_t)max_rows_per_file;
  return ok;
}

/* The commit preconditions: the version the commit must land on (0 = any) and the config
 * key/value pairs the table must hold. */
static int preconditions_in(JNIEnv *env, WriteIn *w, jlong expected_version, jobjectArray required_config) {
  if (!str_array(env, required_config, "required config", 0, &w->required)) return 0;
  w->p.expected_version = (uint64_t)expected_version;
  w->p.required_config = (const char *const *)w->required.items;
  return 1;
}

static void write_in_free(WriteIn *w) {
  free(w->sid);
  free(w->msg);
  str_array_free(&w->opts);
  str_array_free(&w->required);
}

/* long[]{version, committed, rows written, fragments, files, rows deleted, updated, inserted}. */
static jlongArray result_out(JNIEnv *env, const LanceWriteResult *r) {
  jlong v[8] = {(jlong)r->version, r->committed, (jlong)r->rows_written, (jlong)r->fragments_written,
                (jlong)r->files_written, (jlong)r->rows_deleted, (jlong)r->rows_updated, (jlong)r->rows_inserted};
  jlongArray out = (*env)->NewLongArray(env, 8);
  if (out) (*env)->SetLongArrayRegion(env, out, 0, 8, v);
  return out;
}

/* Object[]{byte[] staged, long[] result} of a staged write the library returned (takes `bytes`). */
static jobjectArray staged_out(JNIEnv *env, uint8_t *bytes, size_t len, const LanceWriteResult *r) {
  jbyteArray b = take_bytes(env, bytes, len);
  jlongArray res = b ? result_out(env, r) : NULL;
  jobjectArray out = b && res ? (*env)->NewObjectArray(env, 2, g_object, NULL) : NULL;
  if (out) {
    (*env)->SetObjectArrayElement(env, out, 0, b);
    (*env)->SetObjectArrayElement(env, out, 1, res);
  }
  return out;
}

/* CREATE TABLE AS a Java stream (may hold no batch): long[] write result. The stream is consumed. */
JNIEXPORT jlongArray JNI(catalogCreateTable)(JNIEnv *env, jclass c, jlong h, jobjectArray ns, jstring table,
                                             jobject source, jobjectArray options) {
  (void)c;
  struct ArrowArrayStream data;
  if (!host_stream(env, source, &data)) return NULL;
  int ok = 1;
  char *t = utf8(env, table, "table", &ok);
  StrArray n = {0}, o = {0};
  jlongArray out = NULL;
  if (ok && str_array(env, ns, "namespace", 0, &n) && str_array(env, options, "storage options", 0, &o)) {
    LanceWriteParams p;
    lance_write_params_init_v2(&p, sizeof p);
    p.storage_options = (const char *const *)o.items;
    LanceWriteResult r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    if (check(env, lance_catalog_create_table(PTR(LanceCatalog, h), (const char *const *)n.items, n.len, t, &data, &p,
                                              NULL, &r)))
      out = result_out(env, &r);
  }
  str_array_free(&n);
  str_array_free(&o);
  if (data.release) data.release(&data);
  free(t);
  return out;
}

/* Writes a Java stream and commits (create, append, overwrite): long[]{version, committed,
 * rows, fragments, files}. The stream is consumed (closed) in every case. */
JNIEXPORT jlongArray JNI(tableWrite)(JNIEnv *env, jclass c, jstring uri, jlong at, jobject source, jint mode,
                                     jstring statement_id, jstring message, jobjectArray options, jlong max_rows_per_file,
                                     jlong expected_version, jobjectArray required_config, jboolean stable_row_ids) {
  (void)c;
  struct ArrowArrayStream data;
  if (!host_stream(env, source, &data)) return NULL;
  int ok = 1;
  char *u = utf8(env, uri, "uri", &ok);
  WriteIn w;
  memset(&w, 0, sizeof w);
  jlongArray out = NULL;
  if (ok && write_in(env, &w, mode, statement_id, message, options, max_rows_per_file) &&
      preconditions_in(env, &w, expected_version, required_config)) {
    w.p.stable_row_ids = stable_row_ids ? 1 : 0;
    LanceWriteResult r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    if (check(env, lance_table_write(u, PTR(LanceDataset, at), &data, &w.p, NULL, &r))) out = result_out(env, &r);
  }
  write_in_free(&w);
  if (data.release) data.release(&data);
  free(u);
  return out;
}

/* Stages a Java stream: Object[]{byte[] staged, long[] result}. The stream is consumed. */
JNIEXPORT jobjectArray JNI(stageWrite)(JNIEnv *env, jclass c, jstring uri, jlong at, jobject source, jint mode,
                                       jobjectArray options, jlong max_rows_per_file) {
  (void)c;
  struct ArrowArrayStream data;
  if (!host_stream(env, source, &data)) return NULL;
  int ok = 1;
  char *u = utf8(env, uri, "uri", &ok);
  WriteIn w;
  memset(&w, 0, sizeof w);
  jobjectArray out = NULL;
  if (ok && write_in(env, &w, mode, NULL, NULL, options, max_rows_per_file)) {
    LanceWriteResult r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (check(env, lance_table_stage_write(u, PTR(LanceDataset, at), &data, &w.p, &bytes, &len, &r)))
      out = staged_out(env, bytes, len, &r);
  }
  write_in_free(&w);
  if (data.release) data.release(&data);
  free(u);
  return out;
}

/* ---- writes ----------------------------------------------------------------------------- */

/* Commits staged writes once: long[]{version, committed (1/0), rows, fragments, files}. */
JNIEXPORT jlongArray JNI(tableCommit)(JNIEnv *env, jclass c, jstring uri, jobjectArray staged, jint mode,
                                      jstring statement_id, jstring message, jobjectArray options,
                                      jlong expected_version, jobjectArray required_config) {
  (void)c;
  int ok = 1;
  char *u = utf8(env, uri, "uri", &ok);
  WriteIn w;
  memset(&w, 0, sizeof w);
  BytesIn in = {0};
  jlongArray out = NULL;
  if (ok && write_in(env, &w, mode, statement_id, message, options, 0) &&
      preconditions_in(env, &w, expected_version, required_config) && bytes_in(env, staged, "staged writes", &in)) {
    LanceWriteResult r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    if (check(env, lance_table_commit(u, (const uint8_t *const *)in.ptrs, in.lens, in.len, &w.p, NULL, &r)))
      out = result_out(env, &r);
  }
  bytes_in_free(env, &in);
  write_in_free(&w);
  free(u);
  return out;
}

/* Commits staged writes of several tables together: long[][] of per-table results (see
 * tableCommit). Per table i: uris[i], staged[i] (byte[][]), statementIds[i], messages[i],
 * options[i] (String[] key/value), expectedVersions[i], requiredConfigs[i] (String[]); the
 * Java side passes arrays of one length. */
JNIEXPORT jobjectArray JNI(commitTables)(JNIEnv *env, jclass c, jobjectArray uris, jobjectArray staged,
                                         jobjectArray statement_ids, jobjectArray messages, jobjectArray options,
                                         jlongArray expected_versions, jobjectArray required_configs) {
  (void)c;
  if (!uris || !staged || !statement_ids || !messages || !options || !expected_versions || !required_configs) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "the tables of a multi-table commit are null");
    return NULL;
  }
  size_t n = (size_t)(*env)->GetArrayLength(env, uris);
  char **u = calloc(n + 1, sizeof(char *));
  WriteIn *w = calloc(n + 1, sizeof(WriteIn));
  BytesIn *in = calloc(n + 1, sizeof(BytesIn));
  const LanceWriteParams **params = calloc(n + 1, sizeof(LanceWriteParams *));
  const uint8_t *const **ptrs = calloc(n + 1, sizeof(uint8_t **));
  const size_t **lens = calloc(n + 1, sizeof(size_t *));
  size_t *counts = calloc(n + 1, sizeof(size_t));
  LanceWriteResult *r = calloc(n + 1, sizeof(LanceWriteResult));
  LanceWriteResult **rp = calloc(n + 1, sizeof(LanceWriteResult *));
  jobjectArray out = NULL;
  int ok = u && w && in && params && ptrs && lens && counts && r && rp;
  if (!ok) throw_code(env, LANCE_ERR_INTERNAL, "out of memory");
  jlong *ev = ok ? (*env)->GetLongArrayElements(env, expected_versions, NULL) : NULL;
  if (ok && !ev) ok = 0;
  size_t filled = 0;
  for (size_t i = 0; ok && i < n; i++) {
    jstring ui = (jstring)(*env)->GetObjectArrayElement(env, uris, (jsize)i);
    jobjectArray si = (jobjectArray)(*env)->GetObjectArrayElement(env, staged, (jsize)i);
    jstring sid = (jstring)(*env)->GetObjectArrayElement(env, statement_ids, (jsize)i);
    jstring msg = (jstring)(*env)->GetObjectArrayElement(env, messages, (jsize)i);
    jobjectArray oi = (jobjectArray)(*env)->GetObjectArrayElement(env, options, (jsize)i);
    jobjectArray ri = (jobjectArray)(*env)->GetObjectArrayElement(env, required_configs, (jsize)i);
    if (!ui) {
      throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "a table's uri is null");
      ok = 0;
    }
    if (ok) u[i] = utf8(env, ui, "uri", &ok);
    filled = i + 1; /* w[i] and in[i] are zeroed or filled: freed below either way */
    if (ok) ok = write_in(env, &w[i], 1, sid, msg, oi, 0) && preconditions_in(env, &w[i], ev[i], ri) &&
                 bytes_in(env, si, "staged writes", &in[i]);
    if (ok) {
      params[i] = &w[i].p;
      ptrs[i] = (const uint8_t *const *)in[i].ptrs;
      lens[i] = in[i].lens;
      counts[i] = in[i].len;
      r[i].struct_size = sizeof r[i];
      rp[i] = &r[i];
    }
    if (ui) (*env)->DeleteLocalRef(env, ui);
    if (si) (*env)->DeleteLocalRef(env, si);
    if (sid) (*env)->DeleteLocalRef(env, sid);
    if (msg) (*env)->DeleteLocalRef(env, msg);
    if (oi) (*env)->DeleteLocalRef(env, oi);
    if (ri) (*env)->DeleteLocalRef(env, ri);
  }
  if (ok && check(env, lance_commit_tables(n, (const char *const *)u, ptrs, lens, counts, params, NULL, rp))) {
    out = (*env)->NewObjectArray(env, (jsize)n, g_object, NULL);
    for (size_t i = 0; out && i < n; i++) {
      jlongArray one = result_out(env, &r[i]);
      if (!one) {
        out = NULL;
        break;
      }
      (*env)->SetObjectArrayElement(env, out, (jsize)i, one);
      (*env)->DeleteLocalRef(env, one);
    }
  }
  if (ev) (*env)->ReleaseLongArrayElements(env, expected_versions, ev, JNI_ABORT);
  for (size_t i = 0; i < filled; i++) {
    free(u[i]);
    write_in_free(&w[i]);
    bytes_in_free(env, &in[i]);
  }
  free(u);
  free(w);
  free(in);
  free(params);
  free(ptrs);
  free(lens);
  free(counts);
  free(r);
  free(rp);
  return out;
}

/* The table config as String[]{key, value, ...} sorted by key. */
JNIEXPORT jobjectArray JNI(datasetConfig)(JNIEnv *env, jclass c, jlong ds) {
  (void)c;
  LanceStringList *list = NULL;
  if (!check(env, lance_dataset_config(PTR(LanceDataset, ds), &list))) return NULL;
  jobjectArray out = strings_out(env, lance_string_list_count(list), string_list_get, list);
  lance_string_list_free(list);
  return out;
}

/* Sets and removes config keys as one new version: long[] write result. */
JNIEXPORT jlongArray JNI(datasetUpdateConfig)(JNIEnv *env, jclass c, jlong ds, jobjectArray set, jobjectArray remove,
                                              jlong expected_version, jobjectArray required_config) {
  (void)c;
  WriteIn w;
  memset(&w, 0, sizeof w);
  StrArray kv = {0}, keys = {0};
  jlongArray out = NULL;
  if (write_in(env, &w, 0, NULL, NULL, NULL, 0) && preconditions_in(env, &w, expected_version, required_config) &&
      str_array(env, set, "config values", 0, &kv) && str_array(env, remove, "config keys", 0, &keys)) {
    LanceWriteResult r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    if (check(env, lance_dataset_update_config(PTR(LanceDataset, ds), (const char *const *)kv.items,
                                               (const char *const *)keys.items, keys.len, &w.p, NULL, &r)))
      out = result_out(env, &r);
  }
  str_array_free(&kv);
  str_array_free(&keys);
  write_in_free(&w);
  return out;
}

/* Change splits after a version (or a time, ms since the epoch; 0 = unset): a split plan. */
JNIEXPORT jobjectArray JNI(planChanges)(JNIEnv *env, jclass c, jlong ds, jlong since_version, jlong since_ms,
                                        jint types, jlong target_rows) {
  (void)c;
  LanceChangesParams p;
  lance_changes_params_init_v2(&p, sizeof p);
  p.since_version = (uint64_t)since_version;
  p.since_timestamp_ms = (int64_t)since_ms;
  p.change_types = (uint32_t)types;
  p.target_rows = (uint64_t)target_rows;
  LanceSplitPlan *plan = NULL;
  if (!check(env, lance_dataset_plan_changes(PTR(LanceDataset, ds), &p, &plan))) return NULL;
  return plan_out(env, plan);
}

/* Deletes the rows matching `predicate` as one new version: long[]{version, rows_deleted}. */
JNIEXPORT jlongArray JNI(datasetDelete)(JNIEnv *env, jclass c, jlong ds, jstring predicate, jstring statement_id) {
  (void)c;
  int ok = 1;
  char *p = utf8(env, predicate, "predicate", &ok);
  char *sid = ok ? utf8(env, statement_id, "statement id", &ok) : NULL;
  jlongArray out = NULL;
  if (ok) {
    LanceWriteParams params;
    lance_write_params_init_v2(&params, sizeof params);
    params.statement_id = sid;
    LanceWriteResult r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    if (check(env, lance_dataset_delete(PTR(LanceDataset, ds), p, &params, NULL, &r))) {
      jlong v[2] = {(jlong)r.version, (jlong)r.rows_deleted};
      out = (*env)->NewLongArray(env, 2);
      if (out) (*env)->SetLongArrayRegion(env, out, 0, 2, v);
    }
  }
  free(p);
  free(sid);
  return out;
}

/* Stages the deletion of rows by address (no I/O): Object[]{byte[] staged, long[] result}. */
JNIEXPORT jobjectArray JNI(stageRowDeletes)(JNIEnv *env, jclass c, jlong ds, jlongArray addresses) {
  (void)c;
  if (!addresses) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "row addresses are null");
    return NULL;
  }
  jsize n = (*env)->GetArrayLength(env, addresses);
  jlong *a = (*env)->GetLongArrayElements(env, addresses, NULL);
  if (!a) return NULL;
  LanceWriteResult r;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  uint8_t *bytes = NULL;
  size_t len = 0;
  jobjectArray out = NULL;
  if (check(env, lance_dataset_stage_row_deletes(PTR(LanceDataset, ds), (const uint64_t *)a, (size_t)n, &bytes, &len, &r)))
    out = staged_out(env, bytes, len, &r);
  (*env)->ReleaseLongArrayElements(env, addresses, a, JNI_ABORT);
  return out;
}

/* Stages one worker's share of a delete (a scan split's fragments; null = all). */
JNIEXPORT jobjectArray JNI(stageDelete)(JNIEnv *env, jclass c, jlong ds, jbyteArray split, jstring predicate) {
  (void)c;
  int ok = 1;
  char *p = utf8(env, predicate, "predicate", &ok);
  LanceSplit *s = NULL;
  jobjectArray out = NULL;
  if (ok && (!split || (s = split_in(env, split)))) {
    LanceWriteResult r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (check(env, lance_dataset_stage_delete(PTR(LanceDataset, ds), s, p, &bytes, &len, &r)))
      out = staged_out(env, bytes, len, &r);
  }
  if (s) lance_split_free(s);
  free(p);
  return out;
}

/* Updates the rows matching `predicate` (null = all): columns[i] = expressions[i], one version. */
JNIEXPORT jlongArray JNI(datasetUpdate)(JNIEnv *env, jclass c, jlong ds, jobjectArray columns, jobjectArray expressions,
                                        jstring predicate, jstring statement_id) {
  (void)c;
  int ok = 1;
  char *p = utf8(env, predicate, "predicate", &ok);
  char *sid = ok ? utf8(env, statement_id, "statement id", &ok) : NULL;
  StrArray cols = {0}, exprs = {0};
  jlongArray out = NULL;
  if (ok && str_array(env, columns, "columns", 0, &cols) && str_array(env, expressions, "expressions", 0, &exprs)) {
    LanceWriteParams params;
    lance_write_params_init_v2(&params, sizeof params);
    params.statement_id = sid;
    LanceWriteResult r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    if (cols.len != exprs.len) {
      throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "columns and expressions differ in length");
    } else if (check(env, lance_dataset_update(PTR(LanceDataset, ds), (const char *const *)cols.items,
                                                (const char *const *)exprs.items, cols.len, p, &params, NULL, &r))) {
      out = result_out(env, &r);
    }
  }
  str_array_free(&cols);
  str_array_free(&exprs);
  free(p);
  free(sid);
  return out;
}

/* A merge-insert of a Java stream: committed (long[] result) or staged (Object[]{bytes, result}).
 * `modes` = {when_matched, when_not_matched, when_not_matched_by_source}. The stream is consumed. */
JNIEXPORT jobject JNI(mergeInsert)(JNIEnv *env, jclass c, jlong ds, jobject source, jobjectArray on, jintArray modes,
                                   jstring matched_condition, jstring by_source_condition, jstring statement_id,
                                   jboolean staged) {
  (void)c;
  struct ArrowArrayStream data;
  if (!host_stream(env, source, &data)) return NULL;
  int ok = 1;
  char *mc = utf8(env, matched_condition, "when-matched condition", &ok);
  char *bc = ok ? utf8(env, by_source_condition, "by-source condition", &ok) : NULL;
  char *sid = ok ? utf8(env, statement_id, "statement id", &ok) : NULL;
  StrArray keys = {0};
  jobject out = NULL;
  jint m[3] = {0, 0, 0};
  if (ok && (!modes || (*env)->GetArrayLength(env, modes) != 3)) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "merge modes must be {when_matched, when_not_matched, by_source}");
    ok = 0;
  }
  if (ok) (*env)->GetIntArrayRegion(env, modes, 0, 3, m);
  if (ok && str_array(env, on, "key columns", 0, &keys)) {
    LanceMergeInsert spec;
    lance_merge_insert_init_v2(&spec, sizeof spec);
    spec.on = (const char *const *)keys.items;
    spec.num_on = keys.len;
    spec.when_matched = m[0];
    spec.when_not_matched = m[1];
    spec.when_not_matched_by_source = m[2];
    spec.when_matched_condition = mc;
    spec.by_source_condition = bc;
    LanceWriteResult r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    if (staged) {
      uint8_t *bytes = NULL;
      size_t len = 0;
      if (check(env, lance_dataset_stage_merge_insert(PTR(LanceDataset, ds), &data, &spec, &bytes, &len, &r)))
        out = staged_out(env, bytes, len, &r);
    } else {
      LanceWriteParams params;
      lance_write_params_init_v2(&params, sizeof params);
      params.statement_id = sid;
      if (check(env, lance_dataset_merge_insert(PTR(LanceDataset, ds), &data, &spec, &params, NULL, &r)))
        out = result_out(env, &r);
    }
  }
  str_array_free(&keys);
  if (data.release) data.release(&data);
  free(mc);
  free(bc);
  free(sid);
  return out;
}

/* Deletes the files of staged writes that will not be committed; returns the files deleted. */
JNIEXPORT jlong JNI(stagedAbort)(JNIEnv *env, jclass c, jobjectArray staged, jobjectArray options) {
  (void)c;
  StrArray o = {0};
  BytesIn in = {0};
  uint64_t deleted = 0;
  if (str_array(env, options, "storage options", 0, &o) && bytes_in(env, staged, "staged writes", &in)) {
    check(env, lance_staged_write_abort((const uint8_t *const *)in.ptrs, in.lens, in.len,
                                        (const char *const *)o.items, &deleted));
  }
  bytes_in_free(env, &in);
  str_array_free(&o);
  return (jlong)deleted;
}


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
typedef struct {
  LanceVectorIndexParams v;
  LanceScalarIndexParams sc;
  LanceInvertedIndexParams iv;
} IndexParams;

static int index_params(JNIEnv *env, jint kind, jintArray params, IndexParams *out) {
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

/* ---- full-text search -------------------------------------------------------------------- */

JNIEXPORT jobjectArray JNI(planFts)(JNIEnv *env, jclass c, jlong ds, jstring column, jlong flat_target_rows) {
  (void)c;
  int ok = 1;
  char *col = utf8(env, column, "column", &ok);
  if (!ok) return NULL;
  LanceSplitPlan *plan = NULL;
  int32_t rc = lance_dataset_plan_fts(PTR(LanceDataset, ds), col, (uint64_t)flat_target_rows, &plan);
  free(col);
  if (!check(env, rc)) return NULL;
  return plan_out(env, plan);
}

typedef struct {
  LanceTextQuery q;
  char *column, *text, *prefilter;
  StrArray cols;
} TextIn;

static int text_in(JNIEnv *env, TextIn *t, jstring column, jstring text, jint match, jint slop, jlong k,
                   jstring prefilter, jobjectArray columns) {
  memset(t, 0, sizeof *t);
  lance_text_query_init(&t->q, sizeof t->q);
  int ok = 1;
  t->column = utf8(env, column, "column", &ok);
  if (ok) t->text = utf8(env, text, "query text", &ok);
  if (ok) t->prefilter = utf8(env, prefilter, "prefilter", &ok);
  if (ok) ok = str_array(env, columns, "columns", 0, &t->cols);
  t->q.column = t->column;
  t->q.text = t->text;
  t->q.match_kind = match;
  t->q.slop = (uint32_t)slop;
  t->q.k = (uint64_t)k;
  t->q.prefilter_sql = t->prefilter;
  t->q.columns = (const char *const *)t->cols.items;
  t->q.num_columns = t->cols.len;
  t->q.with_row_id = true;
  return ok;
}

static void text_in_free(TextIn *t) {
  free(t->column);
  free(t->text);
  free(t->prefilter);
  str_array_free(&t->cols);
}

/* The corpus statistics of a query (BM25), as bytes to ship to every split. */
JNIEXPORT jbyteArray JNI(ftsStats)(JNIEnv *env, jclass c, jlong ds, jstring column, jstring text, jint match, jint slop,
                                   jlong k, jstring prefilter) {
  (void)c;
  TextIn t;
  jbyteArray out = NULL;
  if (text_in(env, &t, column, text, match, slop, k, prefilter, NULL)) {
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (check(env, lance_dataset_fts_stats(PTR(LanceDataset, ds), &t.q, &bytes, &len, NULL))) out = take_bytes(env, bytes, len);
  }
  text_in_free(&t);
  return out;
}

JNIEXPORT jlong JNI(splitFts)(JNIEnv *env, jclass c, jlong ds, jbyteArray split, jstring column, jstring text, jint match,
                              jint slop, jlong k, jstring prefilter, jobjectArray columns, jbyteArray stats) {
  (void)c;
  if (!stats) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "full-text statistics are null");
    return 0;
  }
  TextIn t;
  jlong out = 0;
  LanceSplit *s = NULL;
  if (text_in(env, &t, column, text, match, slop, k, prefilter, columns) && (s = split_in(env, split))) {
    jsize n = (*env)->GetArrayLength(env, stats);
    jbyte *p = (*env)->GetByteArrayElements(env, stats, NULL);
    if (p) {
      struct ArrowArrayStream *stream = new_stream(env);
      if (stream)
        out = stream_out(env, lance_split_fts_search(PTR(LanceDataset, ds), s, &t.q, (const uint8_t *)p, (size_t)n, stream),
                         stream);
      (*env)->ReleaseByteArrayElements(env, stats, p, JNI_ABORT);
    }
  }
  if (s) lance_split_free(s);
  text_in_free(&t);
  return out;
}

JNIEXPORT jlong JNI(ftsMerge)(JNIEnv *env, jclass c, jlongArray streams, jlong k, jlong offset) {
  (void)c;
  return merge(env, streams, MERGE_TEXT, k, offset);
}


/* ---- statistics and blobs ---------------------------------------------------------------- */

/* Object[]{long[] fragments: (id, physical rows, deleted rows, bytes or -1) each,
 * String[] column names, long[] column bytes (-1 = unknown)}. */
JNIEXPORT jobjectArray JNI(datasetStatistics)(JNIEnv *env, jclass c, jlong ds) {
  (void)c;
  LanceTableStats *st = NULL;
  if (!check(env, lance_dataset_statistics_v2(PTR(LanceDataset, ds), &st, NULL))) return NULL;
  size_t nf = lance_table_stats_fragment_count(st), nc = lance_table_stats_column_count(st);
  jlongArray frags = (*env)->NewLongArray(env, (jsize)(4 * nf));
  jobjectArray names = (*env)->NewObjectArray(env, (jsize)nc, g_string, NULL);
  jlongArray bytes = (*env)->NewLongArray(env, (jsize)nc);
  int ok = frags && names && bytes;
  for (size_t i = 0; ok && i < nf; i++) {
    LanceFragmentStats f;
    memset(&f, 0, sizeof f);
    f.struct_size = sizeof f;
    if (!check(env, lance_table_stats_fragment_v2(st, i, &f))) { ok = 0; break; }
    jlong v[4] = {(jlong)f.fragment_id, (jlong)f.physical_rows, (jlong)f.deleted_rows, f.has_bytes_on_disk ? (jlong)f.bytes_on_disk : -1};
    (*env)->SetLongArrayRegion(env, frags, (jsize)(4 * i), 4, v);
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
  jobjectArray out = (*env)->NewObjectArray(env, 3, g_object, NULL);
  if (out) {
    (*env)->SetObjectArrayElement(env, out, 0, frags);
    (*env)->SetObjectArrayElement(env, out, 1, names);
    (*env)->SetObjectArrayElement(env, out, 2, bytes);
  }
  return out;
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
JNIEXPORT jobjectArray JNI(blobsInfo)(JNIEnv *env, jclass c, jlong h, jlong index) {
  (void)c;
  if (index < 0) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "blob index is negative");
    return NULL;
  }
  LanceBlobInfo info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (!check(env, lance_blobs_info(PTR(LanceBlobs, h), (size_t)index, &info))) return NULL;
  jlong v[4] = {(jlong)info.row_id, (jlong)info.size, info.kind, info.is_null};
  jlongArray nums = (*env)->NewLongArray(env, 4);
  if (!nums) return NULL;
  (*env)->SetLongArrayRegion(env, nums, 0, 4, v);
  jstring uri = info.uri ? new_string(env, info.uri) : NULL;
  jobjectArray out = (*env)->NewObjectArray(env, 2, g_object, NULL);
  if (out) {
    (*env)->SetObjectArrayElement(env, out, 0, nums);
    (*env)->SetObjectArrayElement(env, out, 1, uri);
  }
  return out;
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

/* ---- Arrow streams, schemas, arrays ------------------------------------------------------ */

/* The stream behind a Java handle, or NULL with an exception when it was already released. */
static struct ArrowArrayStream *live_stream(JNIEnv *env, jlong h) {
  struct ArrowArrayStream *s = PTR(struct ArrowArrayStream, h);
  if (!s || !s->release) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "the stream was already released");
    return NULL;
  }
  return s;
}

/* A failed get_schema/get_next as the exception of its errno, with the stream's message. */
static void throw_stream(JNIEnv *env, struct ArrowArrayStream *s, int rc, const char *fallback) {
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
