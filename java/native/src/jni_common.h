/* Shared by the JNI glue files (jni_*.c): includes, handle macros, the types several areas
 * use, the JNI references cached at load, and the helpers for errors, strings, arrays and
 * Arrow structs. Helpers have hidden visibility (CMake), so only the JNI entry points are
 * exported from liblance_host_jni.so. */
#ifndef LANCE_HOST_JNI_COMMON_H
#define LANCE_HOST_JNI_COMMON_H

#include <jni.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "lance_host.h"

#define PTR(T, h) ((T *)(intptr_t)(h))
#define JNI(name) JNICALL Java_org_lancehost_Native_##name

extern jclass g_exception;        /* org.lancehost.LanceException */
extern jmethodID g_exception_of;  /* static LanceException of(int, String) */
extern jclass g_string;           /* java.lang.String */
extern jmethodID g_string_bytes;  /* byte[] getBytes(Charset) */
extern jmethodID g_string_new;    /* String(byte[], Charset) */
extern jobject g_utf8;            /* StandardCharsets.UTF_8 */
extern jclass g_byte_array;       /* byte[] */
extern jclass g_object;           /* java.lang.Object */
extern JavaVM *g_vm;
extern jclass g_credentials;
extern jmethodID g_credentials_answer;
extern jclass g_host_stream;      /* org.lancehost.HostStream */
extern jmethodID g_hs_schema;     /* Object[] schemaDescription() */
extern jmethodID g_hs_next;       /* long[] nextBatch() */
extern jmethodID g_hs_release;    /* void releaseBatch(long) */
extern jmethodID g_hs_close;      /* void closeFromNative() */
extern jmethodID g_throwable_string; /* String Throwable.toString() */
extern jclass g_io_stats;         /* org.lancehost.IoStats */
extern jmethodID g_io_stats_new;  /* IoStats(long x 9) */
extern jclass g_write_result;      /* org.lancehost.Write$Result */
extern jmethodID g_write_result_new; /* Result(long, boolean, long x 6) */

/* What `merge` combines: vector top-k, full-text top-k, or aggregate partial states. */
enum MergeKind { MERGE_TOPK, MERGE_TEXT, MERGE_AGGREGATE };

typedef struct {
  char **items;
  size_t len;
} StrArray;

typedef struct {
  jbyteArray *arrays;
  jbyte **ptrs;
  size_t *lens;
  size_t len;
} BytesIn;

typedef struct {
  StrArray cols;
  char *filter, *order_by, *key_column;
  StrArray keys; /* the runtime key set as text (NULL items: NULL keys) */
} ScanStrings;

typedef struct {
  const void *buffers[3];
  uint8_t *validity;
  int32_t *offsets;
  char *data;
} KeyTexts;

typedef struct {
  jobject source; /* global ref to the HostStream */
  char *error;
} HostStreamPrivate;

typedef struct {
  char **formats;
  char **names;
  jlong *flags;
  jint *children;
  jsize n;
  jsize next;
} SchemaDesc;

typedef struct {
  jobject source; /* global ref, root only */
  jlong id;
} BatchPrivate;

typedef struct {
  LanceWriteParams p;
  char *sid, *msg;
  StrArray opts, required;
} WriteIn;

typedef struct {
  LanceVectorIndexParams v;
  LanceScalarIndexParams sc;
  LanceInvertedIndexParams iv;
} IndexParams;

typedef struct {
  LanceTextQuery q;
  char *column, *text, *prefilter;
  StrArray cols;
} TextIn;


void throw_code(JNIEnv *env, int32_t code, const char *message);
void throw_last(JNIEnv *env);
int check(JNIEnv *env, int32_t rc);
int32_t errno_code(int e);
jstring new_string(JNIEnv *env, const char *s);
char *utf8(JNIEnv *env, jstring s, const char *what, int *ok);
void str_array_free(StrArray *a);
int str_array(JNIEnv *env, jobjectArray arr, const char *what, int allow_null_items, StrArray *out);
jbyteArray bytes_out(JNIEnv *env, const uint8_t *data, size_t len);
jbyteArray take_bytes(JNIEnv *env, uint8_t *data, size_t len);
jstring take_string(JNIEnv *env, char *s);
LanceSplit *split_in(JNIEnv *env, jbyteArray bytes);
struct ArrowArrayStream *new_stream(JNIEnv *env);
jlong stream_out(JNIEnv *env, int32_t rc, struct ArrowArrayStream *s);
void bytes_in_free(JNIEnv *env, BytesIn *b);
int bytes_in(JNIEnv *env, jobjectArray arr, const char *what, BytesIn *out);
jobject plan_out(JNIEnv *env, LanceSplitPlan *plan);
void scan_strings_free(ScanStrings *t);
int scan_options(JNIEnv *env, LanceScanOptions *o, ScanStrings *t, jobjectArray columns, jstring filter_sql,
                        jlong limit, jlong offset, jlong batch_size, jboolean with_row_id, jstring order_by,
                        jstring key_column, jobjectArray keys);
void key_texts_release(struct ArrowArray *a);
int key_texts_array(const StrArray *keys, struct ArrowArray *a);
struct ArrowArrayStream *streams_in(JNIEnv *env, jlongArray handles, jsize *n);
void streams_release(struct ArrowArrayStream *arr, jsize n);
jlong merge(JNIEnv *env, jlongArray streams, enum MergeKind kind, jlong k, jlong offset);
jclass string_array_class(JNIEnv *env);
jobjectArray strings_out(JNIEnv *env, size_t n, const char *(*get)(const void *, size_t), const void *obj);
const char *string_list_get(const void *l, size_t i);
JNIEnv *attached_env(void);
char *take_exception(JNIEnv *env);
void schema_release(struct ArrowSchema *s);
int build_schema(SchemaDesc *d, struct ArrowSchema *out);
int hs_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out);
void array_free_tree(struct ArrowArray *a);
void child_release(struct ArrowArray *a);
void root_release(struct ArrowArray *a);
int build_array(const jlong *v, jsize n, jsize *pos, struct ArrowArray *out);
int hs_get_next(struct ArrowArrayStream *s, struct ArrowArray *out);
const char *hs_get_last_error(struct ArrowArrayStream *s);
void hs_release(struct ArrowArrayStream *s);
int host_stream(JNIEnv *env, jobject source, struct ArrowArrayStream *out);
int write_in(JNIEnv *env, WriteIn *w, jint mode, jstring statement_id, jstring message, jobjectArray options,
                    jlong max_rows_per_file);
int preconditions_in(JNIEnv *env, WriteIn *w, jlong expected_version, jobjectArray required_config);
void write_in_free(WriteIn *w);
jobject result_out(JNIEnv *env, const LanceWriteResult *r);
jobject new_object(JNIEnv *env, const char *cls, const char *sig, ...);
jobject staged_out(JNIEnv *env, uint8_t *bytes, size_t len, const LanceWriteResult *r);
int index_params(JNIEnv *env, jint kind, jintArray params, IndexParams *out);
int text_in(JNIEnv *env, TextIn *t, jstring column, jstring text, jint match, jint slop, jlong k,
                   jstring prefilter, jobjectArray columns);
void text_in_free(TextIn *t);
struct ArrowArrayStream *live_stream(JNIEnv *env, jlong h);
void throw_stream(JNIEnv *env, struct ArrowArrayStream *s, int rc, const char *fallback);

#endif
