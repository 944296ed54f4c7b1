/* JNI glue of the Java API (org.lancehost.Native): aggregate. See jni_common.c. */
#include "jni_common.h"

/* ---- aggregates -------------------------------------------------------------------------- */

JNIEXPORT jlong JNI(aggregate)(JNIEnv *env, jclass c, jlong ds, jbyteArray split, jobjectArray group_by,
                               jobjectArray group_expressions, jintArray functions,
                               jobjectArray columns, jobjectArray aliases, jobjectArray expressions,
                               jstring filter_sql, jbyteArray substrait_plan) {
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
  StrArray exprs;
  if (!str_array(env, expressions, "aggregate expressions", 1, &exprs)) {
    str_array_free(&g);
    str_array_free(&cols);
    str_array_free(&names);
    return 0;
  }
  StrArray key_exprs;
  if (!str_array(env, group_expressions, "group-by expressions", 1, &key_exprs)) {
    str_array_free(&g);
    str_array_free(&cols);
    str_array_free(&names);
    str_array_free(&exprs);
    return 0;
  }
  int any_key_expression = 0;
  for (size_t i = 0; i < key_exprs.len; i++) any_key_expression |= key_exprs.items[i] != NULL;
  int ok = 1;
  char *filter = utf8(env, filter_sql, "filter", &ok);
  jlong out = 0;
  jsize nf = (*env)->GetArrayLength(env, functions);
  if (ok && ((columns && cols.len != (size_t)nf) || (aliases && names.len != (size_t)nf) ||
             (expressions && exprs.len != (size_t)nf))) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "aggregate functions, columns, names and expressions differ in length");
    ok = 0;
  }
  if (ok && group_expressions && key_exprs.len != g.len) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "group keys and group-by expressions differ in length");
    ok = 0;
  }
  LanceSplit *s = NULL;
  if (ok && split && !(s = split_in(env, split))) ok = 0;
  jint *fns = ok ? (*env)->GetIntArrayElements(env, functions, NULL) : NULL;
  jsize plan_len = substrait_plan ? (*env)->GetArrayLength(env, substrait_plan) : 0;
  jbyte *plan = fns && plan_len > 0 ? (*env)->GetByteArrayElements(env, substrait_plan, NULL) : NULL;
  if (fns && (plan_len == 0 || plan)) {
    LanceAggregateSpec spec;
    lance_aggregate_init_v2(&spec, sizeof spec);
    spec.group_by = (const char *const *)g.items;
    spec.num_group_by = g.len;
    spec.functions = (const int32_t *)fns;
    spec.columns = (const char *const *)cols.items;
    spec.aliases = (const char *const *)names.items;
    spec.expressions = (const char *const *)exprs.items;
    spec.group_by_expressions = any_key_expression ? (const char *const *)key_exprs.items : NULL;
    spec.num_aggregates = (size_t)nf;
    spec.filter_sql = filter;
    spec.substrait_plan = (const uint8_t *)plan;
    spec.substrait_plan_len = (size_t)plan_len;
    struct ArrowArrayStream *stream = new_stream(env);
    if (stream) {
      int32_t rc = s ? lance_dataset_aggregate_split(PTR(LanceDataset, ds), s, &spec, stream, NULL)
                     : lance_dataset_aggregate(PTR(LanceDataset, ds), &spec, stream, NULL);
      out = stream_out(env, rc, stream);
    }
  }
  if (plan) (*env)->ReleaseByteArrayElements(env, substrait_plan, plan, JNI_ABORT);
  if (fns) (*env)->ReleaseIntArrayElements(env, functions, fns, JNI_ABORT);
  if (s) lance_split_free(s);
  free(filter);
  str_array_free(&g);
  str_array_free(&cols);
  str_array_free(&names);
  str_array_free(&exprs);
  str_array_free(&key_exprs);
  return out;
}

JNIEXPORT jlong JNI(aggregateMerge)(JNIEnv *env, jclass c, jlongArray streams) {
  (void)c;
  return merge(env, streams, MERGE_AGGREGATE, 0, 0);
}
