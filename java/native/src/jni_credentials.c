/* JNI glue of the Java API (org.lancehost.Native): credentials a host refreshes itself
 * (org.lancehost.Credentials). See jni_common.c. */
#include "jni_common.h"

/* Runs on a library thread (attached to the JVM as a daemon): asks the provider (a global
 * reference, `user_data`) through Credentials.answer, which never throws, and hands its options
 * to the sink. */
static int32_t refresh_from_java(const char *table_uri, LanceStorageOptionsSink *sink, void *user_data) {
  JNIEnv *env = attached_env();
  if (!env || (*env)->ExceptionCheck(env)) return LANCE_ERR_INTERNAL;
  if ((*env)->PushLocalFrame(env, 8) != 0) {
    (*env)->ExceptionClear(env);
    return LANCE_ERR_INTERNAL;
  }
  int32_t rc = LANCE_ERR_INTERNAL;
  jstring uri = new_string(env, table_uri);
  jintArray code = uri ? (*env)->NewIntArray(env, 1) : NULL;
  jobjectArray kv = code ? (jobjectArray)(*env)->CallStaticObjectMethod(env, g_credentials, g_credentials_answer,
                                                                         (jobject)user_data, uri, code)
                         : NULL;
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionClear(env);
  } else if (!kv) {
    jint c = 0;
    if (code) (*env)->GetIntArrayRegion(env, code, 0, 1, &c);
    rc = c ? c : LANCE_ERR_IO;
  } else {
    StrArray o;
    if (str_array(env, kv, "refreshed storage options", 0, &o)) {
      rc = LANCE_OK;
      for (size_t i = 0; rc == LANCE_OK && i + 1 < o.len; i += 2) rc = lance_storage_options_sink_set(sink, o.items[i], o.items[i + 1]);
      str_array_free(&o);
    } else {
      (*env)->ExceptionClear(env); /* a NUL inside a key or value: no options */
      rc = LANCE_ERR_INVALID_ARGUMENT;
    }
  }
  (*env)->PopLocalFrame(env, NULL);
  return rc;
}

/* Called once by the library when no opened table needs the provider any more. */
static void release_provider(void *user_data) {
  JNIEnv *env = attached_env();
  if (env) (*env)->DeleteGlobalRef(env, (jobject)user_data);
}

JNIEXPORT void JNI(credentialsRegister)(JNIEnv *env, jclass c, jstring uri, jobjectArray options, jobject provider) {
  (void)c;
  if (!provider) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "the credentials provider is null");
    return;
  }
  int ok = 1;
  char *u = utf8(env, uri, "uri", &ok);
  StrArray o = {0};
  if (ok && str_array(env, options, "storage options", 0, &o)) {
    jobject ref = (*env)->NewGlobalRef(env, provider);
    if (!ref) {
      throw_code(env, LANCE_ERR_INTERNAL, "out of memory keeping the credentials provider");
    } else if (!check(env, lance_credentials_register(u, (const char *const *)o.items, refresh_from_java, ref,
                                                      release_provider))) {
      (*env)->DeleteGlobalRef(env, ref); /* refused: the library does not call release_provider */
    }
  }
  str_array_free(&o);
  free(u);
}
