/* JNI glue of the Java API (org.lancehost.Native): split. See jni_common.c. */
#include "jni_common.h"

/* ---- splits ------------------------------------------------------------------------------ */

/* A plan as an org.lancehost.SplitPlan (index name, reason, the splits' bytes); frees `plan`. */
jobject plan_out(JNIEnv *env, LanceSplitPlan *plan) {
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
  jobject out = NULL;
  if (splits) {
    const char *name = lance_split_plan_index_name(plan);
    jstring index = name ? new_string(env, name) : NULL;
    jstring reason = new_string(env, lance_split_plan_reason(plan));
    if (!(*env)->ExceptionCheck(env))
      out = new_object(env, "org/lancehost/SplitPlan", "(Ljava/lang/String;Ljava/lang/String;[[B)V", index, reason, splits);
  }
  lance_split_plan_free(plan);
  return out;
}

JNIEXPORT jobject JNI(planScan)(JNIEnv *env, jclass c, jlong ds, jlong target_rows, jboolean slices) {
  (void)c;
  LanceSplitPlan *plan = NULL;
  int32_t rc = slices ? lance_dataset_plan_scan_slices(PTR(LanceDataset, ds), (uint64_t)target_rows, &plan)
                      : lance_dataset_plan_scan(PTR(LanceDataset, ds), (uint64_t)target_rows, &plan);
  if (!check(env, rc)) return NULL;
  return plan_out(env, plan);
}

JNIEXPORT jobject JNI(planVectorSearch)(JNIEnv *env, jclass c, jlong ds, jstring column, jint metric,
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

/* A split's facts as an org.lancehost.Split (kind, version, rows, row slice: -1 = none). */
JNIEXPORT jobject JNI(splitInfo)(JNIEnv *env, jclass c, jbyteArray split) {
  (void)c;
  LanceSplit *s = split_in(env, split);
  if (!s) return NULL;
  uint64_t off = 0, cnt = 0;
  int has_slice = lance_split_row_slice(s, &off, &cnt) == 1;
  jint kind = (jint)lance_split_kind(s);
  jlong version = (jlong)lance_split_version(s), rows = (jlong)lance_split_row_count(s);
  lance_split_free(s);
  return new_object(env, "org/lancehost/Split", "(IJJJJ)V", kind, version, rows, has_slice ? (jlong)off : (jlong)-1,
                    has_slice ? (jlong)cnt : (jlong)-1);
}
