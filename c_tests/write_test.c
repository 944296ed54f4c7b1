/* Writes from C, the way an engine's sink does them: CREATE TABLE AS SELECT from a scan stream,
 * workers staging appends from split scans on a shipped snapshot, one commit (exactly once by
 * statement id), a delete, a conflicting overwrite, aborted staged files, and bad inputs.
 * argv[1] = warehouse directory written by the testkit; the tables written go to a new
 * temporary directory. */
#include <stdlib.h>

#include "test_util.h"

static struct ArrowArrayStream scan_where(const LanceDataset* ds, const LanceSplit* split, const char* filter) {
  LanceScanOptions o;
  CHECK_OK(lance_scan_options_init_v2(&o, sizeof o));
  const char* cols[] = {"id", "category"};
  o.columns = cols;
  o.num_columns = 2;
  o.filter_sql = filter;
  struct ArrowArrayStream st;
  if (split)
    CHECK_OK(lance_split_scan_v2(ds, split, &o, &st));
  else
    CHECK_OK(lance_dataset_scan_v2(ds, &o, &st));
  return st;
}

/* A schema the test owns statically: releasing it only marks it released. */
static void release_static_schema(struct ArrowSchema* s) { s->release = NULL; }

static uint64_t count(const LanceDataset* ds) {
  uint64_t n = 0;
  CHECK_OK(lance_dataset_count_rows(ds, &n));
  return n;
}

static void count_progress(const char* stage, uint64_t done, uint64_t total, const char* unit, void* user) {
  (void)done;
  (void)total;
  if (stage != NULL && unit != NULL) (*(uint64_t*)user)++;
}

int main(int argc, char** argv) {
  CHECK(argc == 2);
  char src_uri[4096];
  snprintf(src_uri, sizeof src_uri, "%s/vectors.lance", argv[1]);
  LanceDataset* src = lance_dataset_open(src_uri, NULL, 0);
  CHECK(src != NULL);
  uint64_t small = 0, rest = 0;
  CHECK_OK(lance_dataset_count_rows_where_v2(src, "id < 500", &small, NULL));
  CHECK_OK(lance_dataset_count_rows_where_v2(src, "id >= 500", &rest, NULL));

  char dir[] = "/tmp/lance_host_write_test_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char uri[4200];
  snprintf(uri, sizeof uri, "%s/copy.lance", dir);

  /* CREATE TABLE AS SELECT: the scan stream goes straight into the write. */
  LanceWriteParams p;
  CHECK_OK(lance_write_params_init_v2(&p, sizeof p));
  p.mode = LANCE_WRITE_CREATE;
  p.max_rows_per_file = 200;
  p.commit_message = "create from vectors";
  struct ArrowArrayStream data = scan_where(src, NULL, "id < 500");
  LanceDataset* v1 = NULL;
  LanceWriteResult r = {.struct_size = sizeof r};
  CHECK_OK(lance_table_write(uri, NULL, &data, &p, &v1, &r));
  CHECK(data.release == NULL); /* the library took the stream */
  CHECK_EQ_U64(r.version, 1);
  CHECK_EQ_U64(r.rows_written, small);
  CHECK(r.files_written >= (small + 199) / 200 && r.bytes_written > 0 && r.committed == 1);
  CHECK_EQ_U64(count(v1), small);

  /* Workers: each stages its split's rows on the coordinator's shipped snapshot. */
  uint8_t* token = NULL;
  size_t token_len = 0;
  CHECK_OK(lance_dataset_export_snapshot(v1, &token, &token_len));
  LanceSplitPlan* plan = NULL;
  CHECK_OK(lance_dataset_plan_scan(src, 0, &plan));
  size_t nsplits = lance_split_plan_count(plan);
  CHECK(nsplits >= 2 && nsplits <= 64);
  uint8_t* staged[64];
  size_t staged_len[64];
  uint64_t staged_rows = 0;
  p.mode = LANCE_WRITE_APPEND;
  p.commit_message = NULL;
  for (size_t i = 0; i < nsplits && i < 64; i++) {
    LanceDataset* worker = lance_snapshot_open(token, token_len, NULL);
    CHECK(worker != NULL);
    LanceSplit* split = lance_split_plan_get(plan, i);
    CHECK(split != NULL);
    struct ArrowArrayStream share = scan_where(src, split, "id >= 500");
    lance_split_free(split);
    LanceWriteResult sr = {.struct_size = sizeof sr};
    CHECK_OK(lance_table_stage_write(uri, worker, &share, &p, &staged[i], &staged_len[i], &sr));
    CHECK(sr.version == 0 && sr.committed == 0);
    staged_rows += sr.rows_written;
    lance_dataset_free(worker);
  }
  CHECK_EQ_U64(staged_rows, rest);
  LanceDataset* latest = lance_dataset_open(uri, NULL, 0);
  CHECK_EQ_U64(lance_dataset_version(latest), 1); /* staging commits nothing */
  lance_dataset_free(latest);

  /* One commit; a retried coordinator gets the same version back. */
  p.statement_id = "insert-into-copy-1";
  LanceDataset* v2 = NULL;
  CHECK_OK(lance_table_commit(uri, (const uint8_t* const*)staged, staged_len, nsplits, &p, &v2, &r));
  CHECK(r.version == 2 && r.committed == 1 && r.rows_written == rest);
  CHECK_EQ_U64(count(v2), small + rest);
  LanceDataset* again = NULL;
  CHECK_OK(lance_table_commit(uri, (const uint8_t* const*)staged, staged_len, nsplits, &p, &again, &r));
  CHECK(r.version == 2 && r.committed == 0);
  CHECK_EQ_U64(count(again), small + rest);
  lance_dataset_free(again);

  /* Damaged bytes: a clear code, nothing committed. */
  staged[0][staged_len[0] / 2] ^= 0x5a;
  CHECK(lance_table_commit(uri, (const uint8_t* const*)staged, staged_len, 1, NULL, NULL, NULL) == LANCE_ERR_CORRUPT);
  CHECK(strstr(lance_last_error_message(), "staged[0]") != NULL);
  staged[0][staged_len[0] / 2] ^= 0x5a;

  /* Delete. */
  LanceDataset* v3 = NULL;
  CHECK_OK(lance_dataset_delete(v2, "category = 'rare'", NULL, &v3, &r));
  uint64_t rare = 0;
  CHECK_OK(lance_dataset_count_rows_where_v2(v2, "category = 'rare'", &rare, NULL));
  CHECK(r.version == 3 && r.rows_deleted == rare);
  CHECK_EQ_U64(count(v3), small + rest - rare);
  CHECK_EQ_U64(count(v2), small + rest); /* v2 keeps its version */
  CHECK(lance_dataset_delete(v3, "no_such_column = 1", NULL, NULL, NULL) == LANCE_ERR_INVALID_ARGUMENT);

  /* UPDATE and MERGE INTO (upsert of the table's own first rows with a changed category). */
  const char* set_cols[] = {"category"};
  const char* set_exprs[] = {"'updated'"};
  LanceDataset* v4 = NULL;
  CHECK_OK(lance_dataset_update(v3, set_cols, set_exprs, 1, "id < 100", NULL, &v4, &r));
  uint64_t under100 = 0;
  CHECK_OK(lance_dataset_count_rows_where_v2(v3, "id < 100", &under100, NULL));
  CHECK(r.version == 4 && r.rows_updated == under100);
  uint64_t updated = 0;
  CHECK_OK(lance_dataset_count_rows_where_v2(v4, "category = 'updated'", &updated, NULL));
  CHECK_EQ_U64(updated, under100);
  LanceMergeInsert m;
  CHECK_OK(lance_merge_insert_init_v2(&m, sizeof m));
  const char* on[] = {"id"};
  m.on = on;
  m.num_on = 1;
  m.when_matched = LANCE_WHEN_MATCHED_UPDATE_ALL;
  struct ArrowArrayStream source = scan_where(src, NULL, "id < 100"); /* the original rows */
  LanceDataset* v5 = NULL;
  CHECK_OK(lance_dataset_merge_insert(v4, &source, &m, NULL, &v5, &r));
  CHECK(source.release == NULL);
  uint64_t src_under100 = 0;
  CHECK_OK(lance_dataset_count_rows_where_v2(src, "id < 100", &src_under100, NULL));
  /* rows deleted as 'rare' come back as inserts; the others are updated back */
  CHECK(r.version == 5 && r.rows_updated == under100 && r.rows_inserted == src_under100 - under100);
  CHECK_OK(lance_dataset_count_rows_where_v2(v5, "category = 'updated'", &updated, NULL));
  CHECK_EQ_U64(updated, 0);
  m.when_matched = 77;
  source = scan_where(src, NULL, "id < 100");
  CHECK(lance_dataset_merge_insert(v5, &source, &m, NULL, NULL, NULL) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(source.release == NULL);
  lance_dataset_free(v4);
  lance_dataset_free(v5);

  /* An overwrite planned at version 2 loses to the delete: LANCE_ERR_CONFLICT, table intact;
   * its staged files are aborted. */
  p.mode = LANCE_WRITE_OVERWRITE;
  p.statement_id = NULL;
  struct ArrowArrayStream over = scan_where(src, NULL, "id < 10");
  uint8_t* ob = NULL;
  size_t ob_len = 0;
  CHECK_OK(lance_table_stage_write(uri, v2, &over, &p, &ob, &ob_len, NULL));
  CHECK(lance_table_commit(uri, (const uint8_t* const*)&ob, &ob_len, 1, &p, NULL, NULL) == LANCE_ERR_CONFLICT);
  CHECK(strstr(lance_last_error_message(), "planned at version 2") != NULL);
  uint64_t removed = 0;
  CHECK_OK(lance_staged_write_abort((const uint8_t* const*)&ob, &ob_len, 1, NULL, &removed));
  CHECK(removed >= 1);
  lance_bytes_free(ob, ob_len);
  latest = lance_dataset_open(uri, NULL, 0);
  CHECK_EQ_U64(lance_dataset_version(latest), 5);
  CHECK_EQ_U64(count(latest), small + rest - rare + (src_under100 - under100));
  lance_dataset_free(latest);

  /* Maintenance: tag the latest version, compact, open the tag, cleanup keeps it. */
  latest = lance_dataset_open(uri, NULL, 0);
  CHECK(latest != NULL);
  CHECK_OK(lance_dataset_create_tag(latest, "loaded", 0));
  LanceCompactParams cp;
  CHECK_OK(lance_compact_params_init_v2(&cp, sizeof cp));
  LanceCompactResult cr = {.struct_size = sizeof cr};
  LanceDataset* compacted = NULL;
  CHECK_OK(lance_dataset_compact(latest, &cp, &compacted, &cr));
  CHECK(cr.version > 5 && cr.version == lance_dataset_version(compacted) && cr.fragments_removed > cr.fragments_added);
  CHECK_EQ_U64(count(compacted), count(latest));
  LanceTagList* tags = NULL;
  CHECK_OK(lance_dataset_tags(compacted, &tags));
  CHECK(lance_tag_list_count(tags) == 1 && strcmp(lance_tag_list_name(tags, 0), "loaded") == 0);
  CHECK_EQ_U64(lance_tag_list_version(tags, 0), 5);
  lance_tag_list_free(tags);
  LanceDataset* tagged = lance_dataset_open_tag(uri, NULL, "loaded");
  CHECK(tagged != NULL && lance_dataset_version(tagged) == 5);
  uint64_t versions_removed = 0;
  CHECK_OK(lance_dataset_cleanup(compacted, 0, false, &versions_removed, NULL));
  CHECK(versions_removed >= 1);
  CHECK_EQ_U64(count(tagged), count(latest)); /* the tagged version's files stay */
  CHECK(lance_dataset_open_tag(uri, NULL, "nope") == NULL && lance_last_error_code() == LANCE_ERR_NOT_FOUND);
  CHECK_OK(lance_dataset_delete_tag(compacted, "loaded"));
  lance_dataset_free(tagged);
  lance_dataset_free(compacted);
  lance_dataset_free(latest);

  /* A distributed DELETE: each worker stages its scan split's share, one commit. */
  latest = lance_dataset_open(uri, NULL, 0);
  CHECK(latest != NULL);
  uint64_t before_delete = count(latest), to_delete = 0;
  const char* pred = "id % 4 = 1";
  CHECK_OK(lance_dataset_count_rows_where_v2(latest, pred, &to_delete, NULL));
  CHECK(to_delete > 0);
  LanceSplitPlan* dplan = NULL;
  CHECK_OK(lance_dataset_plan_scan(latest, 100, &dplan));
  size_t nd = lance_split_plan_count(dplan);
  CHECK(nd >= 1 && nd <= 64);
  uint8_t* dstaged[64];
  size_t dstaged_len[64];
  uint64_t share_rows = 0;
  for (size_t i = 0; i < nd; i++) {
    LanceSplit* split = lance_split_plan_get(dplan, i);
    LanceWriteResult sr = {.struct_size = sizeof sr};
    CHECK_OK(lance_dataset_stage_delete(latest, split, pred, &dstaged[i], &dstaged_len[i], &sr));
    CHECK(sr.version == 0 && sr.committed == 0);
    share_rows += sr.rows_deleted;
    lance_split_free(split);
  }
  lance_split_plan_free(dplan);
  CHECK_EQ_U64(share_rows, to_delete);
  CHECK(lance_dataset_stage_delete(latest, NULL, "id = = 1", &ob, &ob_len, NULL) == LANCE_ERR_INVALID_ARGUMENT);
  LanceDataset* deleted = NULL;
  CHECK_OK(lance_table_commit(uri, (const uint8_t* const*)dstaged, dstaged_len, nd, NULL, &deleted, &r));
  CHECK(r.committed == 1 && r.rows_deleted == to_delete && r.version == lance_dataset_version(latest) + 1);
  CHECK_EQ_U64(count(deleted), before_delete - to_delete);
  for (size_t i = 0; i < nd; i++) lance_bytes_free(dstaged[i], dstaged_len[i]);

  /* A staged MERGE INTO: computed, then committed alone. */
  m.when_matched = LANCE_WHEN_MATCHED_UPDATE_ALL;
  source = scan_where(src, NULL, "id < 50");
  uint8_t* mb = NULL;
  size_t mb_len = 0;
  LanceWriteResult mr = {.struct_size = sizeof mr};
  CHECK_OK(lance_dataset_stage_merge_insert(deleted, &source, &m, &mb, &mb_len, &mr));
  uint64_t src_under50 = 0;
  CHECK_OK(lance_dataset_count_rows_where_v2(src, "id < 50", &src_under50, NULL));
  CHECK(source.release == NULL && mr.version == 0 && mr.rows_inserted + mr.rows_updated == src_under50);
  LanceDataset* merged = NULL;
  CHECK_OK(lance_table_commit(uri, (const uint8_t* const*)&mb, &mb_len, 1, NULL, &merged, &r));
  CHECK(r.rows_inserted == mr.rows_inserted && r.rows_updated == mr.rows_updated);
  CHECK_EQ_U64(count(merged), count(deleted) + mr.rows_inserted);
  lance_bytes_free(mb, mb_len);

  /* A distributed compaction: tasks out, results back, one commit. */
  CHECK_OK(lance_compact_params_init_v2(&cp, sizeof cp));
  cp.target_rows_per_fragment = 1000000;
  LanceBytesList* tasks = NULL;
  CHECK_OK(lance_dataset_plan_compaction(merged, &cp, &tasks));
  size_t ntasks = lance_bytes_list_count(tasks);
  CHECK(ntasks >= 1 && ntasks <= 64);
  uint8_t* results[64];
  size_t result_len[64];
  for (size_t i = 0; i < ntasks; i++) {
    size_t tlen = 0;
    const uint8_t* task = lance_bytes_list_get(tasks, i, &tlen);
    CHECK(task != NULL && tlen > 0);
    LanceDataset* worker = lance_dataset_open(uri, NULL, lance_dataset_version(merged));
    CHECK_OK(lance_compaction_task_execute(worker, task, tlen, &results[i], &result_len[i]));
    lance_dataset_free(worker);
  }
  size_t tlen = 0;
  CHECK(lance_bytes_list_get(tasks, ntasks, &tlen) == NULL && lance_last_error_code() == LANCE_ERR_INVALID_ARGUMENT);
  lance_bytes_list_free(tasks);
  cr.struct_size = sizeof cr;
  LanceDataset* dcompacted = NULL;
  CHECK_OK(lance_dataset_commit_compaction(merged, (const uint8_t* const*)results, result_len, ntasks, &cp,
                                           &dcompacted, &cr));
  CHECK(cr.version > lance_dataset_version(merged) && cr.fragments_removed >= cr.fragments_added);
  CHECK_EQ_U64(count(dcompacted), count(merged));
  for (size_t i = 0; i < ntasks; i++) lance_bytes_free(results[i], result_len[i]);

  /* ALTER TABLE: a computed column, a null column from an Arrow C schema, a drop. */
  const char* add_names[] = {"id_times_3"};
  const char* add_exprs[] = {"id * 3"};
  LanceDataset* added = NULL;
  CHECK_OK(lance_dataset_add_columns(dcompacted, add_names, add_exprs, 1, &added));
  uint64_t consistent = 0;
  CHECK_OK(lance_dataset_count_rows_where_v2(added, "id_times_3 = id * 3", &consistent, NULL));
  CHECK_EQ_U64(consistent, count(dcompacted));
  struct ArrowSchema note = {.format = "u", .name = "note", .flags = 2 /* ARROW_FLAG_NULLABLE */,
                             .release = release_static_schema};
  struct ArrowSchema* note_children[] = {&note};
  struct ArrowSchema cols = {.format = "+s", .name = "", .n_children = 1, .children = note_children,
                             .release = release_static_schema};
  LanceDataset* with_note = NULL;
  CHECK_OK(lance_dataset_add_null_columns(added, &cols, &with_note));
  CHECK(cols.release != NULL); /* borrowed, not released */
  uint64_t null_notes = 0;
  CHECK_OK(lance_dataset_count_rows_where_v2(with_note, "note IS NULL", &null_notes, NULL));
  CHECK_EQ_U64(null_notes, count(dcompacted));
  CHECK(lance_dataset_add_null_columns(with_note, &cols, NULL) == LANCE_ERR_INVALID_ARGUMENT); /* exists */
  const char* drop_names[] = {"note", "id_times_3"};
  LanceDataset* dropped = NULL;
  CHECK_OK(lance_dataset_drop_columns(with_note, drop_names, 2, &dropped));
  CHECK(lance_dataset_count_rows_where_v2(dropped, "note IS NULL", &null_notes, NULL) != LANCE_OK);
  CHECK(lance_dataset_drop_columns(dropped, drop_names, 1, NULL) == LANCE_ERR_INVALID_ARGUMENT);
  lance_dataset_free(dropped);
  lance_dataset_free(with_note);
  lance_dataset_free(added);
  lance_dataset_free(dcompacted);
  lance_dataset_free(merged);
  lance_dataset_free(deleted);
  lance_dataset_free(latest);

  /* CREATE INDEX from C on a copy with vectors: IVF_FLAT and BITMAP, listed, then dropped. */
  {
    char vuri[4300];
    snprintf(vuri, sizeof vuri, "%s/indexed.lance", dir);
    LanceScanOptions vo;
    CHECK_OK(lance_scan_options_init_v2(&vo, sizeof vo));
    const char* vcols[] = {"id", "category", "embedding"};
    vo.columns = vcols;
    vo.num_columns = 3;
    vo.filter_sql = "id < 400";
    struct ArrowArrayStream vs;
    CHECK_OK(lance_dataset_scan_v2(src, &vo, &vs));
    LanceDataset* vds = NULL;
    CHECK_OK(lance_table_write(vuri, NULL, &vs, NULL, &vds, NULL));
    LanceVectorIndexParams vp;
    CHECK_OK(lance_vector_index_params_init_v2(&vp, sizeof vp));
    CHECK(vp.index_type == LANCE_VECTOR_INDEX_IVF_PQ && vp.num_partitions == 0);
    vp.index_type = LANCE_VECTOR_INDEX_IVF_FLAT;
    vp.num_partitions = 2;
    LanceDataset* with_vec = NULL;
    CHECK_OK(lance_dataset_create_vector_index(vds, "embedding", "emb_flat", false, &vp, &with_vec));
    CHECK(lance_dataset_create_vector_index(with_vec, "embedding", "emb_flat", false, &vp, NULL) ==
          LANCE_ERR_INVALID_ARGUMENT); /* exists */
    CHECK(lance_dataset_create_vector_index(with_vec, "category", NULL, false, &vp, NULL) == LANCE_ERR_INVALID_ARGUMENT);
    vp.num_partitions = 100000;
    CHECK(lance_dataset_create_vector_index(with_vec, "embedding", "too_many", false, &vp, NULL) ==
          LANCE_ERR_INVALID_ARGUMENT);
    LanceScalarIndexParams sp;
    CHECK_OK(lance_scalar_index_params_init_v2(&sp, sizeof sp));
    sp.index_type = LANCE_SCALAR_INDEX_BITMAP;
    LanceDataset* with_bitmap = NULL;
    CHECK_OK(lance_dataset_create_scalar_index(with_vec, "category", NULL, false, &sp, &with_bitmap));
    LanceIndexList* il = NULL;
    CHECK_OK(lance_dataset_indexes(with_bitmap, &il));
    CHECK(lance_index_list_count(il) == 2);
    lance_index_list_free(il);
    uint64_t rare_in_copy = 0, rare_in_src = 0;
    CHECK_OK(lance_dataset_count_rows_where_v2(with_bitmap, "category = 'rare'", &rare_in_copy, NULL));
    CHECK_OK(lance_dataset_count_rows_where_v2(src, "category = 'rare' AND id < 400", &rare_in_src, NULL));
    CHECK_EQ_U64(rare_in_copy, rare_in_src);
    LanceInvertedIndexParams ip;
    CHECK_OK(lance_inverted_index_params_init_v2(&ip, sizeof ip));
    CHECK(ip.max_token_length == 40 && ip.lower_case == 1 && ip.with_position == 0);
    CHECK(lance_dataset_create_inverted_index(with_bitmap, "id", NULL, false, &ip, NULL) == LANCE_ERR_INVALID_ARGUMENT);
    LanceDataset* dropped = NULL;
    CHECK_OK(lance_dataset_drop_index(with_bitmap, "emb_flat", &dropped));
    CHECK(lance_dataset_drop_index(dropped, "emb_flat", NULL) == LANCE_ERR_NOT_FOUND);

    /* The distributed build: a model trained once, tasks as bytes, a segment per task, one
       commit; progress reports through the call context; damaged bytes refused. */
    LanceCallContext* ctx = lance_call_context_new(0);
    CHECK(ctx != NULL);
    uint64_t reports = 0;
    CHECK_OK(lance_call_context_set_progress(ctx, count_progress, &reports));
    CHECK_OK(lance_call_context_enter(ctx));
    uint8_t* model = NULL;
    size_t model_len = 0;
    vp.num_partitions = 2;
    LanceIoStats train_io;
    train_io.struct_size = sizeof train_io;
    CHECK_OK(lance_dataset_train_vector_index(dropped, "embedding", &vp, &model, &model_len, &train_io));
    CHECK(train_io.read_requests == 0); /* a local table: no object-store requests */
    CHECK(model != NULL && model_len > 0);
    CHECK_OK(lance_call_context_enter(NULL));
    CHECK(reports > 0);
    LanceIndexBuildPlanParams pp;
    CHECK(lance_index_build_plan_params_init_v2(&pp, 4) == LANCE_ERR_INVALID_ARGUMENT);
    CHECK_OK(lance_index_build_plan_params_init_v2(&pp, sizeof pp));
    CHECK(pp.num_splits == 0 && pp.unindexed_only == 0);
    LanceBytesList* tasks = NULL;
    CHECK(lance_dataset_plan_vector_index_build(dropped, "embedding", "dist_flat", false, NULL, 0, &pp, &tasks) ==
          LANCE_ERR_INVALID_ARGUMENT);
    model[model_len - 1] ^= 1;
    CHECK(lance_dataset_plan_vector_index_build(dropped, "embedding", "dist_flat", false, model, model_len, &pp,
                                                &tasks) == LANCE_ERR_CORRUPT);
    model[model_len - 1] ^= 1;
    CHECK_OK(lance_dataset_plan_vector_index_build(dropped, "embedding", "dist_flat", false, model, model_len, &pp,
                                                   &tasks));
    lance_bytes_free(model, model_len);
    size_t num_tasks = lance_bytes_list_count(tasks);
    CHECK(num_tasks >= 1 && num_tasks <= 8);
    uint8_t* segments[8];
    size_t segment_lens[8];
    for (size_t i = 0; i < num_tasks; i++) {
      size_t task_len = 0;
      const uint8_t* task = lance_bytes_list_get(tasks, i, &task_len);
      CHECK(task != NULL);
      CHECK_OK(lance_index_build_task_execute(dropped, task, task_len, &segments[i], &segment_lens[i], NULL));
    }
    CHECK(lance_bytes_list_get(tasks, num_tasks, &segment_lens[0]) == NULL); /* out of range */
    lance_bytes_list_free(tasks);
    segments[0][5] ^= 1;
    CHECK(lance_dataset_commit_index_build(dropped, (const uint8_t* const*)segments, segment_lens, num_tasks, false,
                                           NULL) == LANCE_ERR_CORRUPT);
    segments[0][5] ^= 1;
    LanceDataset* distributed = NULL;
    CHECK_OK(lance_dataset_commit_index_build(dropped, (const uint8_t* const*)segments, segment_lens, num_tasks, true,
                                              &distributed));
    CHECK(lance_dataset_version(distributed) == lance_dataset_version(dropped) + 1);
    for (size_t i = 0; i < num_tasks; i++) lance_bytes_free(segments[i], segment_lens[i]);
    /* a scalar index the same way */
    sp.index_type = LANCE_SCALAR_INDEX_BTREE;
    CHECK_OK(lance_dataset_plan_scalar_index_build(distributed, "id", NULL, false, &sp, NULL, &tasks));
    CHECK(lance_bytes_list_count(tasks) >= 1);
    size_t task_len = 0;
    const uint8_t* task = lance_bytes_list_get(tasks, 0, &task_len);
    uint8_t* segment = NULL;
    size_t segment_len = 0;
    CHECK(lance_index_build_task_execute(distributed, task, task_len - 1, &segment, &segment_len, NULL) == LANCE_ERR_CORRUPT);
    CHECK_OK(lance_index_build_task_execute(distributed, task, task_len, &segment, &segment_len, NULL));
    lance_bytes_list_free(tasks);
    const uint8_t* one[1] = {segment};
    LanceDataset* with_btree = NULL;
    CHECK_OK(lance_dataset_commit_index_build(distributed, one, &segment_len, 1, false, &with_btree));
    lance_bytes_free(segment, segment_len);
    CHECK_OK(lance_dataset_indexes(with_btree, &il));
    CHECK(lance_index_list_count(il) == 3); /* category_idx, dist_flat and id_idx */
    lance_index_list_free(il);
    LanceInvertedIndexParams tp;
    CHECK_OK(lance_inverted_index_params_init_v2(&tp, sizeof tp));
    CHECK(lance_dataset_plan_inverted_index_build(with_btree, "id", NULL, false, &tp, NULL, &tasks) ==
          LANCE_ERR_INVALID_ARGUMENT);
    lance_dataset_free(with_btree);
    lance_dataset_free(distributed);
    lance_call_context_free(ctx);
    lance_dataset_free(dropped);
    lance_dataset_free(with_bitmap);
    lance_dataset_free(with_vec);
    lance_dataset_free(vds);
  }

  /* Bad inputs: codes, and the stream is released on every path. */
  struct ArrowArrayStream bad = scan_where(src, NULL, "id < 5");
  CHECK(lance_table_write(NULL, NULL, &bad, NULL, NULL, NULL) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(bad.release == NULL);
  bad = scan_where(src, NULL, "id < 5");
  p.mode = 42;
  CHECK(lance_table_write(uri, NULL, &bad, &p, NULL, NULL) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(strstr(lance_last_error_message(), "LanceWriteMode") != NULL);
  bad = scan_where(src, NULL, "id < 5");
  p.mode = LANCE_WRITE_CREATE;
  CHECK(lance_table_write(uri, NULL, &bad, &p, NULL, NULL) == LANCE_ERR_INVALID_ARGUMENT); /* exists */
  CHECK(lance_table_write(uri, NULL, NULL, &p, NULL, NULL) == LANCE_ERR_INVALID_ARGUMENT);
  LanceWriteParams tiny;
  CHECK(lance_write_params_init_v2(&tiny, 4) == LANCE_ERR_INVALID_ARGUMENT);

  for (size_t i = 0; i < nsplits; i++) lance_bytes_free(staged[i], staged_len[i]);
  lance_bytes_free(token, token_len);
  lance_split_plan_free(plan);
  lance_dataset_free(v3);
  lance_dataset_free(v2);
  lance_dataset_free(v1);
  lance_dataset_free(src);
  printf("write_test: ok (%llu + %llu rows, %llu deleted)\n", (unsigned long long)small,
         (unsigned long long)rest, (unsigned long long)rare);
  return 0;
}
