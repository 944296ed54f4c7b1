/* JNI glue of the Java API (org.lancehost.Native): write. See jni_common.c. */
#include "jni_common.h"

/* ---- writes ----------------------------------------------------------------------------- */

/* Commits staged writes once: long[]{version, committed (1/0), rows, fragments, files}. */
JNIEXPORT jobject JNI(tableCommit)(JNIEnv *env, jclass c, jstring uri, jobjectArray staged, jint mode,
                                      jstring statement_id, jstring message, jobjectArray options,
                                      jlong expected_version, jobjectArray required_config) {
  (void)c;
  int ok = 1;
  char *u = utf8(env, uri, "uri", &ok);
  WriteIn w;
  memset(&w, 0, sizeof w);
  BytesIn in = {0};
  jobject out = NULL;
  if (ok && write_in(env, &w, mode, statement_id, message, options, 0) &&
      preconditions_in(env, &w, expected_version, required_config) && bytes_in(env, staged, "staged writes", &in)) {
    LanceWriteResult r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    if (check(env, lance_table_commit(u, (const uint8_t *const *)in.ptrs, in.lens, in.len, &w.p, NULL, &r)))
      out = result_out(env, &r);
  }
  bytes_in_free(env, &in);
  write_in_free(&w);
  free(u);
  return out;
}

/* Commits staged writes of several tables together: long[][] of per-table results (see
 * tableCommit). Per table i: uris[i], staged[i] (byte[][]), statementIds[i], messages[i],
 * options[i] (String[] key/value), expectedVersions[i], requiredConfigs[i] (String[]); the
 * Java side passes arrays of one length. */
JNIEXPORT jobjectArray JNI(commitTables)(JNIEnv *env, jclass c, jobjectArray uris, jobjectArray staged,
                                         jobjectArray statement_ids, jobjectArray messages, jobjectArray options,
                                         jlongArray expected_versions, jobjectArray required_configs) {
  (void)c;
  if (!uris || !staged || !statement_ids || !messages || !options || !expected_versions || !required_configs) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "the tables of a multi-table commit are null");
    return NULL;
  }
  size_t n = (size_t)(*env)->GetArrayLength(env, uris);
  char **u = calloc(n + 1, sizeof(char *));
  WriteIn *w = calloc(n + 1, sizeof(WriteIn));
  BytesIn *in = calloc(n + 1, sizeof(BytesIn));
  const LanceWriteParams **params = calloc(n + 1, sizeof(LanceWriteParams *));
  const uint8_t *const **ptrs = calloc(n + 1, sizeof(uint8_t **));
  const size_t **lens = calloc(n + 1, sizeof(size_t *));
  size_t *counts = calloc(n + 1, sizeof(size_t));
  LanceWriteResult *r = calloc(n + 1, sizeof(LanceWriteResult));
  LanceWriteResult **rp = calloc(n + 1, sizeof(LanceWriteResult *));
  jobjectArray out = NULL;
  int ok = u && w && in && params && ptrs && lens && counts && r && rp;
  if (!ok) throw_code(env, LANCE_ERR_INTERNAL, "out of memory");
  jlong *ev = ok ? (*env)->GetLongArrayElements(env, expected_versions, NULL) : NULL;
  if (ok && !ev) ok = 0;
  size_t filled = 0;
  for (size_t i = 0; ok && i < n; i++) {
    jstring ui = (jstring)(*env)->GetObjectArrayElement(env, uris, (jsize)i);
    jobjectArray si = (jobjectArray)(*env)->GetObjectArrayElement(env, staged, (jsize)i);
    jstring sid = (jstring)(*env)->GetObjectArrayElement(env, statement_ids, (jsize)i);
    jstring msg = (jstring)(*env)->GetObjectArrayElement(env, messages, (jsize)i);
    jobjectArray oi = (jobjectArray)(*env)->GetObjectArrayElement(env, options, (jsize)i);
    jobjectArray ri = (jobjectArray)(*env)->GetObjectArrayElement(env, required_configs, (jsize)i);
    if (!ui) {
      throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "a table's uri is null");
      ok = 0;
    }
    if (ok) u[i] = utf8(env, ui, "uri", &ok);
    filled = i + 1; /* w[i] and in[i] are zeroed or filled: freed below either way */
    if (ok) ok = write_in(env, &w[i], 1, sid, msg, oi, 0) && preconditions_in(env, &w[i], ev[i], ri) &&
                 bytes_in(env, si, "staged writes", &in[i]);
    if (ok) {
      params[i] = &w[i].p;
      ptrs[i] = (const uint8_t *const *)in[i].ptrs;
      lens[i] = in[i].lens;
      counts[i] = in[i].len;
      r[i].struct_size = sizeof r[i];
      rp[i] = &r[i];
    }
    if (ui) (*env)->DeleteLocalRef(env, ui);
    if (si) (*env)->DeleteLocalRef(env, si);
    if (sid) (*env)->DeleteLocalRef(env, sid);
    if (msg) (*env)->DeleteLocalRef(env, msg);
    if (oi) (*env)->DeleteLocalRef(env, oi);
    if (ri) (*env)->DeleteLocalRef(env, ri);
  }
  if (ok && check(env, lance_commit_tables(n, (const char *const *)u, ptrs, lens, counts, params, NULL, rp))) {
    out = (*env)->NewObjectArray(env, (jsize)n, g_write_result, NULL);
    for (size_t i = 0; out && i < n; i++) {
      jobject one = result_out(env, &r[i]);
      if (!one) {
        out = NULL;
        break;
      }
      (*env)->SetObjectArrayElement(env, out, (jsize)i, one);
      (*env)->DeleteLocalRef(env, one);
    }
  }
  if (ev) (*env)->ReleaseLongArrayElements(env, expected_versions, ev, JNI_ABORT);
  for (size_t i = 0; i < filled; i++) {
    free(u[i]);
    write_in_free(&w[i]);
    bytes_in_free(env, &in[i]);
  }
  free(u);
  free(w);
  free(in);
  free(params);
  free(ptrs);
  free(lens);
  free(counts);
  free(r);
  free(rp);
  return out;
}

/* The table config as String[]{key, value, ...} sorted by key. */
JNIEXPORT jobjectArray JNI(datasetConfig)(JNIEnv *env, jclass c, jlong ds) {
  (void)c;
  LanceStringList *list = NULL;
  if (!check(env, lance_dataset_config(PTR(LanceDataset, ds), &list))) return NULL;
  jobjectArray out = strings_out(env, lance_string_list_count(list), string_list_get, list);
  lance_string_list_free(list);
  return out;
}

/* Sets and removes config keys as one new version: long[] write result. */
JNIEXPORT jobject JNI(datasetUpdateConfig)(JNIEnv *env, jclass c, jlong ds, jobjectArray set, jobjectArray remove,
                                              jlong expected_version, jobjectArray required_config) {
  (void)c;
  WriteIn w;
  memset(&w, 0, sizeof w);
  StrArray kv = {0}, keys = {0};
  jobject out = NULL;
  if (write_in(env, &w, 0, NULL, NULL, NULL, 0) && preconditions_in(env, &w, expected_version, required_config) &&
      str_array(env, set, "config values", 0, &kv) && str_array(env, remove, "config keys", 0, &keys)) {
    LanceWriteResult r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    if (check(env, lance_dataset_update_config(PTR(LanceDataset, ds), (const char *const *)kv.items,
                                               (const char *const *)keys.items, keys.len, &w.p, NULL, &r)))
      out = result_out(env, &r);
  }
  str_array_free(&kv);
  str_array_free(&keys);
  write_in_free(&w);
  return out;
}

/* Change splits after a version (or a time, ms since the epoch; 0 = unset): a split plan. */
JNIEXPORT jobject JNI(planChanges)(JNIEnv *env, jclass c, jlong ds, jlong since_version, jlong since_ms,
                                        jint types, jlong target_rows) {
  (void)c;
  LanceChangesParams p;
  lance_changes_params_init_v2(&p, sizeof p);
  p.since_version = (uint64_t)since_version;
  p.since_timestamp_ms = (int64_t)since_ms;
  p.change_types = (uint32_t)types;
  p.target_rows = (uint64_t)target_rows;
  LanceSplitPlan *plan = NULL;
  if (!check(env, lance_dataset_plan_changes(PTR(LanceDataset, ds), &p, &plan))) return NULL;
  return plan_out(env, plan);
}

/* Deletes the rows matching `predicate` as one new version: its Write.Result. */
JNIEXPORT jobject JNI(datasetDelete)(JNIEnv *env, jclass c, jlong ds, jstring predicate, jstring statement_id) {
  (void)c;
  int ok = 1;
  char *p = utf8(env, predicate, "predicate", &ok);
  char *sid = ok ? utf8(env, statement_id, "statement id", &ok) : NULL;
  jobject out = NULL;
  if (ok) {
    LanceWriteParams params;
    lance_write_params_init_v2(&params, sizeof params);
    params.statement_id = sid;
    LanceWriteResult r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    if (check(env, lance_dataset_delete(PTR(LanceDataset, ds), p, &params, NULL, &r))) out = result_out(env, &r);
  }
  free(p);
  free(sid);
  return out;
}

/* Stages the deletion of rows by address (no I/O): its Write.Staged. */
JNIEXPORT jobject JNI(stageRowDeletes)(JNIEnv *env, jclass c, jlong ds, jlongArray addresses) {
  (void)c;
  if (!addresses) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "row addresses are null");
    return NULL;
  }
  jsize n = (*env)->GetArrayLength(env, addresses);
  jlong *a = (*env)->GetLongArrayElements(env, addresses, NULL);
  if (!a) return NULL;
  LanceWriteResult r;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  uint8_t *bytes = NULL;
  size_t len = 0;
  jobject out = NULL;
  if (check(env, lance_dataset_stage_row_deletes(PTR(LanceDataset, ds), (const uint64_t *)a, (size_t)n, &bytes, &len, &r)))
    out = staged_out(env, bytes, len, &r);
  (*env)->ReleaseLongArrayElements(env, addresses, a, JNI_ABORT);
  return out;
}

/* Stages one worker's share of a delete (a scan split's fragments; null = all): its Write.Staged. */
JNIEXPORT jobject JNI(stageDelete)(JNIEnv *env, jclass c, jlong ds, jbyteArray split, jstring predicate) {
  (void)c;
  int ok = 1;
  char *p = utf8(env, predicate, "predicate", &ok);
  LanceSplit *s = NULL;
  jobject out = NULL;
  if (ok && (!split || (s = split_in(env, split)))) {
    LanceWriteResult r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (check(env, lance_dataset_stage_delete(PTR(LanceDataset, ds), s, p, &bytes, &len, &r)))
      out = staged_out(env, bytes, len, &r);
  }
  if (s) lance_split_free(s);
  free(p);
  return out;
}

/* Updates the rows matching `predicate` (null = all): columns[i] = expressions[i], one version. */
JNIEXPORT jobject JNI(datasetUpdate)(JNIEnv *env, jclass c, jlong ds, jobjectArray columns, jobjectArray expressions,
                                        jstring predicate, jstring statement_id) {
  (void)c;
  int ok = 1;
  char *p = utf8(env, predicate, "predicate", &ok);
  char *sid = ok ? utf8(env, statement_id, "statement id", &ok) : NULL;
  StrArray cols = {0}, exprs = {0};
  jobject out = NULL;
  if (ok && str_array(env, columns, "columns", 0, &cols) && str_array(env, expressions, "expressions", 0, &exprs)) {
    LanceWriteParams params;
    lance_write_params_init_v2(&params, sizeof params);
    params.statement_id = sid;
    LanceWriteResult r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    if (cols.len != exprs.len) {
      throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "columns and expressions differ in length");
    } else if (check(env, lance_dataset_update(PTR(LanceDataset, ds), (const char *const *)cols.items,
                                                (const char *const *)exprs.items, cols.len, p, &params, NULL, &r))) {
      out = result_out(env, &r);
    }
  }
  str_array_free(&cols);
  str_array_free(&exprs);
  free(p);
  free(sid);
  return out;
}

/* A merge-insert of a Java stream: committed (its Write.Result) or staged (its Write.Staged).
 * `modes` = {when_matched, when_not_matched, when_not_matched_by_source}. The stream is consumed. */
JNIEXPORT jobject JNI(mergeInsert)(JNIEnv *env, jclass c, jlong ds, jobject source, jobjectArray on, jintArray modes,
                                   jstring matched_condition, jstring by_source_condition, jstring statement_id,
                                   jboolean staged) {
  (void)c;
  struct ArrowArrayStream data;
  if (!host_stream(env, source, &data)) return NULL;
  int ok = 1;
  char *mc = utf8(env, matched_condition, "when-matched condition", &ok);
  char *bc = ok ? utf8(env, by_source_condition, "by-source condition", &ok) : NULL;
  char *sid = ok ? utf8(env, statement_id, "statement id", &ok) : NULL;
  StrArray keys = {0};
  jobject out = NULL;
  jint m[3] = {0, 0, 0};
  if (ok && (!modes || (*env)->GetArrayLength(env, modes) != 3)) {
    throw_code(env, LANCE_ERR_INVALID_ARGUMENT, "merge modes must be {when_matched, when_not_matched, by_source}");
    ok = 0;
  }
  if (ok) (*env)->GetIntArrayRegion(env, modes, 0, 3, m);
  if (ok && str_array(env, on, "key columns", 0, &keys)) {
    LanceMergeInsert spec;
    lance_merge_insert_init_v2(&spec, sizeof spec);
    spec.on = (const char *const *)keys.items;
    spec.num_on = keys.len;
    spec.when_matched = m[0];
    spec.when_not_matched = m[1];
    spec.when_not_matched_by_source = m[2];
    spec.when_matched_condition = mc;
    spec.by_source_condition = bc;
    LanceWriteResult r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    if (staged) {
      uint8_t *bytes = NULL;
      size_t len = 0;
      if (check(env, lance_dataset_stage_merge_insert(PTR(LanceDataset, ds), &data, &spec, &bytes, &len, &r)))
        out = staged_out(env, bytes, len, &r);
    } else {
      LanceWriteParams params;
      lance_write_params_init_v2(&params, sizeof params);
      params.statement_id = sid;
      if (check(env, lance_dataset_merge_insert(PTR(LanceDataset, ds), &data, &spec, &params, NULL, &r)))
        out = result_out(env, &r);
    }
  }
  str_array_free(&keys);
  if (data.release) data.release(&data);
  free(mc);
  free(bc);
  free(sid);
  return out;
}

/* Deletes the files of staged writes that will not be committed; returns the files deleted. */
JNIEXPORT jlong JNI(stagedAbort)(JNIEnv *env, jclass c, jobjectArray staged, jobjectArray options) {
  (void)c;
  StrArray o = {0};
  BytesIn in = {0};
  uint64_t deleted = 0;
  if (str_array(env, options, "storage options", 0, &o) && bytes_in(env, staged, "staged writes", &in)) {
    check(env, lance_staged_write_abort((const uint8_t *const *)in.ptrs, in.lens, in.len,
                                        (const char *const *)o.items, &deleted));
  }
  bytes_in_free(env, &in);
  str_array_free(&o);
  return (jlong)deleted;
}
