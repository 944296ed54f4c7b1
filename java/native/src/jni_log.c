/* JNI glue of the Java API (org.lancehost.Native): the library's log records, handed to
 * org.lancehost.LibraryLog (SLF4J). See jni_common.c. */
#include <pthread.h>

#include "jni_common.h"

static jclass g_log_class;      /* org.lancehost.LibraryLog */
static jmethodID g_log_record;  /* static void record(int, String, String) */
static pthread_key_t g_detach_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

/* A library thread the callback attached to the JVM leaves it when the thread exits. */
static void detach_at_exit(void *marker) {
  (void)marker;
  if (g_vm) (*g_vm)->DetachCurrentThread(g_vm);
}

static void make_key(void) { pthread_key_create(&g_detach_key, detach_at_exit); }

/* Runs on whatever thread logs: a Java thread inside a call, or one of the library's own
 * threads, which is attached to the JVM (as a daemon, detached when it exits). A record that
 * cannot be delivered is dropped: logging never fails a call. */
static void log_to_java(int32_t level, const char *target, const char *message, void *user_data) {
  (void)user_data;
  JNIEnv *env = NULL;
  jint r = (*g_vm)->GetEnv(g_vm, (void **)&env, JNI_VERSION_1_8);
  if (r == JNI_EDETACHED) {
    JavaVMAttachArgs args = {JNI_VERSION_1_8, "lance-host-worker", NULL};
    if ((*g_vm)->AttachCurrentThreadAsDaemon(g_vm, (void **)&env, &args) != JNI_OK) return;
    pthread_setspecific(g_detach_key, (void *)1);
  } else if (r != JNI_OK) {
    return;
  }
  /* A Java thread with an exception pending (a call about to fail) may not call Java. */
  if ((*env)->ExceptionCheck(env)) return;
  if ((*env)->PushLocalFrame(env, 4) != 0) {
    (*env)->ExceptionClear(env);
    return;
  }
  jstring t = new_string(env, target ? target : "");
  jstring m = t ? new_string(env, message ? message : "") : NULL;
  if (t && m) (*env)->CallStaticVoidMethod(env, g_log_class, g_log_record, (jint)level, t, m);
  if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env);
  (*env)->PopLocalFrame(env, NULL);
}

/* Routes records at `level` or more severe to LibraryLog.record; 0 stops them. */
JNIEXPORT void JNI(logSetLevel)(JNIEnv *env, jclass c, jint level) {
  (void)c;
  if (level <= 0) {
    check(env, lance_log_set_callback(NULL, NULL, LANCE_LOG_OFF));
    return;
  }
  pthread_once(&g_key_once, make_key);
  if (!g_log_class) {
    jclass k = (*env)->FindClass(env, "org/lancehost/LibraryLog");
    if (!k) return;
    jmethodID m = (*env)->GetStaticMethodID(env, k, "record", "(ILjava/lang/String;Ljava/lang/String;)V");
    if (!m) return;
    g_log_record = m;
    g_log_class = (*env)->NewGlobalRef(env, k);
    if (!g_log_class) return;
  }
  check(env, lance_log_set_callback(log_to_java, NULL, level));
}
