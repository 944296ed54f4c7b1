/* JNI glue of the Java API (org.lancehost.Native): search. See jni_common.c. */
#include "jni_common.h"

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
struct ArrowArrayStream *streams_in(JNIEnv *env, jlongArray handles, jsize *n) {
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

void streams_release(struct ArrowArrayStream *arr, jsize n) {
  for (jsize i = 0; i < n; i++)
    if (arr[i].release) arr[i].release(&arr[i]);
  free(arr);
}

/* The three merges share their ownership rules: the input streams are consumed, the output is a
 * new stream handed to Java. */
jlong merge(JNIEnv *env, jlongArray streams, enum MergeKind kind, jlong k, jlong offset) {
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


/* ---- full-text search -------------------------------------------------------------------- */

JNIEXPORT jobject JNI(planFts)(JNIEnv *env, jclass c, jlong ds, jstring column, jlong flat_target_rows) {
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


int text_in(JNIEnv *env, TextIn *t, jstring column, jstring text, jint match, jint slop, jlong k,
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

void text_in_free(TextIn *t) {
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
