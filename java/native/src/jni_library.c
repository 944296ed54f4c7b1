/* JNI glue of the Java API (org.lancehost.Native): library. See jni_common.c. */
#include "jni_common.h"

/* ---- library ----------------------------------------------------------------------------- */

JNIEXPORT jstring JNI(version)(JNIEnv *env, jclass c) {
  (void)c;
  return new_string(env, lance_host_version());
}

JNIEXPORT jstring JNI(buildProfile)(JNIEnv *env, jclass c) {
  (void)c;
  return new_string(env, lance_host_build_profile());
}

JNIEXPORT jstring JNI(buildFeatures)(JNIEnv *env, jclass c) {
  (void)c;
  return new_string(env, lance_host_build_features());
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
