/* JNI glue of the Java API (org.lancehost.Native): host stream. See jni_common.c. */
#include "jni_common.h"

/* ---- host streams: Java batches exported to the library ---------------------------------- */

/* The library reads a host stream on its own threads: those are attached to the JVM (as
 * daemons, so they never keep it alive) the first time they call back into Java. */
JNIEnv *attached_env(void) {
  JNIEnv *env = NULL;
  jint rc = (*g_vm)->GetEnv(g_vm, (void **)&env, JNI_VERSION_1_8);
  if (rc == JNI_EDETACHED && (*g_vm)->AttachCurrentThreadAsDaemon(g_vm, (void **)&env, NULL) != JNI_OK) return NULL;
  if (rc != JNI_OK && rc != JNI_EDETACHED) return NULL;
  return env;
}

/* The pending Java exception as a malloc'd message (cleared); NULL when none. */
char *take_exception(JNIEnv *env) {
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


/* Schema nodes in pre-order, from HostStream.schemaDescription():
 * Object[]{String[] formats, String[] names, long[] flags, int[] children}. */

void schema_release(struct ArrowSchema *s) {
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

int build_schema(SchemaDesc *d, struct ArrowSchema *out) {
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

int hs_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
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

void array_free_tree(struct ArrowArray *a) {
  for (int64_t i = 0; i < a->n_children; i++) {
    array_free_tree(a->children[i]);
    free(a->children[i]);
  }
  free(a->children);
  free((void *)a->buffers);
}

void child_release(struct ArrowArray *a) {
  a->release = NULL; /* the root owns the tree */
}

void root_release(struct ArrowArray *a) {
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
int build_array(const jlong *v, jsize n, jsize *pos, struct ArrowArray *out) {
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

int hs_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
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

const char *hs_get_last_error(struct ArrowArrayStream *s) {
  return ((HostStreamPrivate *)s->private_data)->error;
}

void hs_release(struct ArrowArrayStream *s) {
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

int host_stream(JNIEnv *env, jobject source, struct ArrowArrayStream *out) {
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

int write_in(JNIEnv *env, WriteIn *w, jint mode, jstring statement_id, jstring message, jobjectArray options,
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
int preconditions_in(JNIEnv *env, WriteIn *w, jlong expected_version, jobjectArray required_config) {
  if (!str_array(env, required_config, "required config", 0, &w->required)) return 0;
  w->p.expected_version = (uint64_t)expected_version;
  w->p.required_config = (const char *const *)w->required.items;
  return 1;
}

void write_in_free(WriteIn *w) {
  free(w->sid);
  free(w->msg);
  str_array_free(&w->opts);
  str_array_free(&w->required);
}

/* A write's LanceWriteResult as an org.lancehost.Write.Result (built here: no positional array). */
jobject result_out(JNIEnv *env, const LanceWriteResult *r) {
  return (*env)->NewObject(env, g_write_result, g_write_result_new, (jlong)r->version, (jboolean)(r->committed != 0),
                           (jlong)r->rows_written, (jlong)r->fragments_written, (jlong)r->files_written,
                           (jlong)r->rows_deleted, (jlong)r->rows_updated, (jlong)r->rows_inserted);
}

/* The org.lancehost.Write.Staged of a staged write the library returned: its bytes and its
 * Write.Result (takes `bytes`; built here: no positional array). */
jobject staged_out(JNIEnv *env, uint8_t *bytes, size_t len, const LanceWriteResult *r) {
  jbyteArray b = take_bytes(env, bytes, len);
  jobject res = b ? result_out(env, r) : NULL;
  return b && res ? new_object(env, "org/lancehost/Write$Staged", "([BLorg/lancehost/Write$Result;)V", b, res) : NULL;
}

/* CREATE TABLE AS a Java stream (may hold no batch): its Write.Result. The stream is consumed. */
JNIEXPORT jobject JNI(catalogCreateTable)(JNIEnv *env, jclass c, jlong h, jobjectArray ns, jstring table,
                                             jobject source, jobjectArray options) {
  (void)c;
  struct ArrowArrayStream data;
  if (!host_stream(env, source, &data)) return NULL;
  int ok = 1;
  char *t = utf8(env, table, "table", &ok);
  StrArray n = {0}, o = {0};
  jobject out = NULL;
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
JNIEXPORT jobject JNI(tableWrite)(JNIEnv *env, jclass c, jstring uri, jlong at, jobject source, jint mode,
                                     jstring statement_id, jstring message, jobjectArray options, jlong max_rows_per_file,
                                     jlong expected_version, jobjectArray required_config, jboolean stable_row_ids) {
  (void)c;
  struct ArrowArrayStream data;
  if (!host_stream(env, source, &data)) return NULL;
  int ok = 1;
  char *u = utf8(env, uri, "uri", &ok);
  WriteIn w;
  memset(&w, 0, sizeof w);
  jobject out = NULL;
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

/* Stages a Java stream: its Write.Staged. The stream is consumed. */
JNIEXPORT jobject JNI(stageWrite)(JNIEnv *env, jclass c, jstring uri, jlong at, jobject source, jint mode,
                                       jobjectArray options, jlong max_rows_per_file) {
  (void)c;
  struct ArrowArrayStream data;
  if (!host_stream(env, source, &data)) return NULL;
  int ok = 1;
  char *u = utf8(env, uri, "uri", &ok);
  WriteIn w;
  memset(&w, 0, sizeof w);
  jobject out = NULL;
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
