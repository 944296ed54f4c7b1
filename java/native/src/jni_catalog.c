/* JNI glue of the Java API (org.lancehost.Native): catalog. See jni_common.c. */
#include "jni_common.h"

/* ---- catalogs --------------------------------------------------------------------------- */

jclass string_array_class(JNIEnv *env) {
  return (*env)->FindClass(env, "[Ljava/lang/String;");
}

jobjectArray strings_out(JNIEnv *env, size_t n, const char *(*get)(const void *, size_t), const void *obj) {
  jobjectArray out = (*env)->NewObjectArray(env, (jsize)n, g_string, NULL);
  for (size_t i = 0; out && i < n; i++) {
    jstring s = new_string(env, get(obj, i));
    if (!s) return NULL;
    (*env)->SetObjectArrayElement(env, out, (jsize)i, s);
    (*env)->DeleteLocalRef(env, s);
  }
  return out;
}

const char *string_list_get(const void *l, size_t i) {
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

/* The table's Catalog.TableInfo (location, storage options as key, value, ..., latest version),
 * built here: no positional array. */
JNIEXPORT jobject JNI(catalogDescribeTable)(JNIEnv *env, jclass c, jlong h, jobjectArray ns, jstring table) {
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
  jobject out = NULL;
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
    jstring loc = o ? new_string(env, lance_table_info_location(info)) : NULL;
    if (loc)
      out = new_object(env, "org/lancehost/Catalog$TableInfo", "(Ljava/lang/String;[Ljava/lang/String;J)V", loc, o,
                       (jlong)lance_table_info_latest_version(info));
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
