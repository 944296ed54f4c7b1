/* JNI glue of the Java API (org.lancehost.Native): scan. See jni_common.c. */
#include "jni_common.h"

/* ---- scans ------------------------------------------------------------------------------- */

/* The strings a scan's options point at (freed with scan_strings_free). */

void scan_strings_free(ScanStrings *t) {
  free(t->filter);
  free(t->order_by);
  free(t->key_column);
  str_array_free(&t->cols);
  str_array_free(&t->keys);
}

int scan_options(JNIEnv *env, LanceScanOptions *o, ScanStrings *t, jobjectArray columns, jstring filter_sql,
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

void key_texts_release(struct ArrowArray *a) {
  KeyTexts *k = (KeyTexts *)a->private_data;
  free(k->validity);
  free(k->offsets);
  free(k->data);
  free(k);
  a->release = NULL;
}

int key_texts_array(const StrArray *keys, struct ArrowArray *a) {
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
