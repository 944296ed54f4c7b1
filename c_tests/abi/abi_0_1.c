/* A host built against the 0.1 header (lance_host_0.1.h, frozen when the structs gained
 * struct_size) and run on the current library: every 0.1 entry point that takes or fills a
 * struct still works with the 0.1 layouts. Every struct lives in a heap block of exactly its
 * 0.1 size, so a library that read or wrote one byte past it fails under valgrind (the
 * *_valgrind test), and each output struct is followed by canary bytes checked here.
 * argv[1] = warehouse directory. */
#include "lance_host_0.1.h"
/* test_util.h includes "lance_host.h" (the current header on the include path); the 0.1
   header's include guard, the same macro, keeps it out, so only 0.1 declarations are seen. */
#include "../test_util.h"

#define CANARY 0xA5
#define GUARD 16

/* A zeroed block of `size` bytes followed by GUARD canary bytes. */
static void* guarded(size_t size) {
  unsigned char* p = (unsigned char*)calloc(1, size + GUARD);
  CHECK(p != NULL);
  memset(p + size, CANARY, GUARD);
  return p;
}

static void check_guard(const void* p, size_t size) {
  const unsigned char* b = (const unsigned char*)p;
  for (size_t i = 0; i < GUARD; i++) CHECK(b[size + i] == CANARY);
}

/* An exact-size copy of *p on the heap (for inputs: valgrind sees any read past it). */
static void* exact_copy(const void* p, size_t size) {
  void* q = malloc(size);
  CHECK(q != NULL);
  memcpy(q, p, size);
  return q;
}

/* Start a scan with 0.1 options passed in an exact-size heap copy. */
static void scan_exact(LanceDataset* ds, const LanceScanOptions* o, struct ArrowArrayStream* st) {
  LanceScanOptions* copy = (LanceScanOptions*)exact_copy(o, sizeof *o);
  CHECK_OK(lance_dataset_scan(ds, copy, st));
  free(copy);
}

static unsigned long long scan_rows(LanceDataset* ds, const LanceScanOptions* o) {
  struct ArrowArrayStream st;
  scan_exact(ds, o, &st);
  return drain_stream(&st, NULL, NULL, NULL, NULL);
}

/* The first value of int64 column `name` in a stream (released). */
static int64_t first_i64(struct ArrowArrayStream* st, const char* name) {
  struct ArrowSchema s;
  CHECK(st->get_schema(st, &s) == 0);
  int c = schema_index(&s, name);
  CHECK(c >= 0);
  struct ArrowArray a;
  CHECK(st->get_next(st, &a) == 0 && a.release && a.length > 0);
  int64_t v = ((const int64_t*)a.children[c]->buffers[1])[a.children[c]->offset];
  a.release(&a);
  s.release(&s);
  st->release(st);
  return v;
}

int main(int argc, char** argv) {
  CHECK(argc == 2);
  Facts facts;
  facts_load(&facts, argv[1]);
  char uri[4096];
  facts_get(&facts, "vectors.uri", uri, sizeof uri);
  size_t dim = (size_t)facts_u64(&facts, "vectors.dim");
  CHECK(dim <= 64);

  /* The loaded library serves this 0.1 caller: same major version, not older. */
  CHECK(strncmp(lance_host_version(), "0.", 2) == 0);
  CHECK(atoi(lance_host_version() + 2) >= LANCE_HOST_VERSION_MINOR);

  /* Session options: defaults in the 0.1 layout, a wrong value at the end of the struct is
     seen (so the fields are read at their 0.1 offsets), then a valid configuration. */
  LanceSessionOptions* so = (LanceSessionOptions*)guarded(sizeof *so);
  CHECK_OK(lance_session_options_default(so));
  check_guard(so, sizeof *so);
  CHECK(so->index_cache_bytes == 1ull << 30 && so->metadata_cache_bytes == 256ull << 20);
  CHECK(so->worker_threads >= 1 && so->scan_io_buffer_bytes == 0);
  LanceSessionOptions bad = *so;
  bad.worker_threads = 0;
  LanceSessionOptions* in = (LanceSessionOptions*)exact_copy(&bad, sizeof bad);
  CHECK(lance_session_configure(in) == LANCE_ERR_INVALID_ARGUMENT);
  free(in);
  so->index_cache_bytes = 300ull << 20;
  so->worker_threads = 2;
  in = (LanceSessionOptions*)exact_copy(so, sizeof *so);
  CHECK_OK(lance_session_configure(in));
  CHECK_OK(lance_session_configure(in)); /* identical values: accepted */
  free(in);
  so->index_cache_bytes = 301ull << 20;
  in = (LanceSessionOptions*)exact_copy(so, sizeof *so);
  CHECK(lance_session_configure(in) == LANCE_ERR_FAILED_PRECONDITION);
  free(in);
  free(so);

  LanceDataset* ds = lance_dataset_open(uri, NULL, 0);
  CHECK(ds != NULL);
  unsigned long long total = facts_u64(&facts, "vectors.rows");

  /* Counts with 0.1 I/O stats. */
  uint64_t n = 0;
  LanceIoStats* io = (LanceIoStats*)guarded(sizeof *io);
  memset(io, 0xFF, sizeof *io);
  CHECK_OK(lance_dataset_count_rows_where(ds, NULL, &n, io));
  check_guard(io, sizeof *io);
  CHECK_EQ_U64(n, total);
  CHECK_EQ_U64(io->read_requests, 0); /* written (a local table reads nothing counted) */
  CHECK_EQ_U64(io->index_cache_misses, 0);

  /* Scans with 0.1 options: projection, filter, limit/offset, fragments, _rowid. */
  LanceScanOptions* o = (LanceScanOptions*)guarded(sizeof *o);
  CHECK_OK(lance_scan_options_init(o));
  check_guard(o, sizeof *o);
  CHECK(o->limit < 0 && o->offset == 0 && o->scan_in_order && o->num_columns == 0);
  CHECK_EQ_U64(scan_rows(ds, o), total);
  const char* id_col[] = {"id"};
  o->columns = id_col;
  o->num_columns = 1;
  o->filter_sql = "id < 100";
  uint64_t below_100 = 0;
  CHECK_OK(lance_dataset_count_rows_where(ds, "id < 100", &below_100, NULL));
  CHECK(below_100 > 20);
  CHECK_EQ_U64(scan_rows(ds, o), below_100);
  int64_t sixth = 0;
  {
    /* The sixth id in order, for the offset check below. */
    o->limit = 6;
    struct ArrowArrayStream st;
    scan_exact(ds, o, &st);
    struct ArrowSchema s;
    CHECK(st.get_schema(&st, &s) == 0);
    size_t seen = 0;
    for (;;) {
      struct ArrowArray a;
      CHECK(st.get_next(&st, &a) == 0);
      if (!a.release) break;
      for (int64_t i = 0; i < a.length; i++, seen++)
        if (seen == 5) sixth = ((const int64_t*)a.children[0]->buffers[1])[a.children[0]->offset + i];
      a.release(&a);
    }
    CHECK(seen == 6);
    s.release(&s);
    st.release(&st);
  }
  o->limit = 10;
  o->offset = 5;
  CHECK_EQ_U64(scan_rows(ds, o), 10);
  o->io_buffer_bytes = 8u << 20; /* last field of the 0.1 layout */
  o->with_row_id = true;
  {
    struct ArrowArrayStream st;
    scan_exact(ds, o, &st);
    struct ArrowSchema s;
    CHECK(st.get_schema(&st, &s) == 0);
    CHECK(s.n_children == 2 && schema_index(&s, "_rowid") == 1);
    s.release(&s);
    LanceIoStats* sio = (LanceIoStats*)guarded(sizeof *sio);
    CHECK_OK(lance_stream_io_stats(&st, sio));
    check_guard(sio, sizeof *sio);
    free(sio);
    CHECK_EQ_U64(first_i64(&st, "id"), sixth);
  }
  o->limit = -1;
  o->offset = 0;
  o->with_row_id = false;
  o->filter_sql = NULL;
  LanceFragmentInfo* frags = NULL;
  size_t nfrags = 0;
  CHECK_OK(lance_dataset_fragments(ds, &frags, &nfrags));
  CHECK(nfrags >= 2);
  o->fragment_ids = &frags[1].id;
  o->num_fragment_ids = 1;
  CHECK_EQ_U64(scan_rows(ds, o), frags[1].logical_rows);
  o->fragment_ids = NULL;
  o->num_fragment_ids = 0;
  o->filter_sql = "id < 100";
  char* text = NULL;
  CHECK_OK(lance_dataset_explain_scan(ds, o, &text));
  CHECK(strstr(text, "ScalarIndexQuery") != NULL);
  lance_string_free(text);

  /* Scan splits: split scans and split counts (0.1 I/O stats) add up to the table. */
  LanceSplitPlan* plan = NULL;
  CHECK_OK(lance_dataset_plan_scan(ds, 0, &plan));
  unsigned long long by_scan = 0, by_count = 0;
  o->filter_sql = NULL;
  for (size_t i = 0; i < lance_split_plan_count(plan); i++) {
    LanceSplit* sp = lance_split_plan_get(plan, i);
    struct ArrowArrayStream st;
    CHECK_OK(lance_split_scan(ds, sp, o, &st));
    by_scan += drain_stream(&st, NULL, NULL, NULL, NULL);
    uint64_t c = 0;
    LanceIoStats* cio = (LanceIoStats*)guarded(sizeof *cio);
    CHECK_OK(lance_split_count_rows(ds, sp, NULL, &c, cio));
    check_guard(cio, sizeof *cio);
    free(cio);
    by_count += c;
    lance_split_free(sp);
  }
  lance_split_plan_free(plan);
  CHECK_EQ_U64(by_scan, total);
  CHECK_EQ_U64(by_count, total);

  /* Statistics through the 0.1 accessors. */
  LanceTableStats* stats = NULL;
  io = (LanceIoStats*)realloc(io, sizeof *io);
  CHECK_OK(lance_dataset_statistics(ds, &stats, io));
  CHECK_EQ_U64(lance_table_stats_fragment_count(stats), nfrags);
  for (size_t i = 0; i < nfrags; i++) {
    LanceFragmentStats* fs = (LanceFragmentStats*)guarded(sizeof *fs);
    CHECK_OK(lance_table_stats_fragment(stats, i, fs));
    check_guard(fs, sizeof *fs);
    CHECK_EQ_U64(fs->fragment_id, frags[i].id);
    CHECK_EQ_U64(fs->physical_rows - fs->deleted_rows, frags[i].logical_rows);
    CHECK(fs->has_bytes_on_disk && fs->bytes_on_disk > 0);
    free(fs);
  }
  int saw_embedding = 0;
  for (size_t i = 0; i < lance_table_stats_column_count(stats); i++) {
    LanceColumnStats* cs = (LanceColumnStats*)guarded(sizeof *cs);
    CHECK_OK(lance_table_stats_column(stats, i, cs));
    check_guard(cs, sizeof *cs);
    CHECK(cs->has_bytes_on_disk && cs->bytes_on_disk > 0);
    saw_embedding |= strcmp(cs->name, "embedding") == 0;
    free(cs);
  }
  CHECK(saw_embedding);
  lance_table_stats_free(stats);

  /* Index segments and per-segment prewarm with 0.1 structs. */
  LanceIndexList* indexes = NULL;
  CHECK_OK(lance_dataset_indexes(ds, &indexes));
  size_t pq = (size_t)-1;
  for (size_t i = 0; i < lance_index_list_count(indexes); i++)
    if (strcmp(lance_index_list_name(indexes, i), "emb_pq") == 0) pq = i;
  CHECK(pq != (size_t)-1);
  size_t nseg = lance_index_list_segment_count(indexes, pq);
  CHECK(nseg == 2);
  uint8_t uuids[32];
  uint64_t covered = 0;
  for (size_t s = 0; s < nseg; s++) {
    LanceIndexSegmentInfo* seg = (LanceIndexSegmentInfo*)guarded(sizeof *seg);
    CHECK_OK(lance_index_list_segment(indexes, pq, s, seg));
    check_guard(seg, sizeof *seg);
    CHECK(seg->num_fragment_ids >= 1 && seg->fragment_ids != NULL && seg->indexed_rows > 0);
    for (size_t f = 0; f < seg->num_fragment_ids; f++) CHECK(seg->fragment_ids[f] < 1000000);
    memcpy(uuids + 16 * s, seg->uuid, 16);
    covered += seg->num_fragment_ids;
    free(seg);
  }
  CHECK(covered <= nfrags);
  lance_index_list_free(indexes);
  LanceIoStats* pio = (LanceIoStats*)guarded(sizeof *pio);
  CHECK_OK(lance_dataset_prewarm_index_with_stats(ds, "emb_pq", pio));
  check_guard(pio, sizeof *pio);
  CHECK_EQ_U64(pio->index_cache_hits + pio->index_cache_misses, nseg);
  CHECK_OK(lance_dataset_prewarm_index_segments(ds, "emb_pq", uuids, 32, pio));
  check_guard(pio, sizeof *pio);
  CHECK_EQ_U64(pio->index_cache_hits, nseg); /* warmed just before */
  CHECK_EQ_U64(pio->index_cache_misses, 0);
  free(pio);

  /* Vector search with a 0.1 query: row 777's own vector is its nearest neighbour. */
  float query[64];
  {
    const char* emb[] = {"embedding"};
    o->columns = emb;
    o->filter_sql = "id = 777";
    struct ArrowArrayStream st;
    scan_exact(ds, o, &st);
    read_single_vector(&st, query, dim);
  }
  LanceVectorQuery* q = (LanceVectorQuery*)guarded(sizeof *q);
  CHECK_OK(lance_vector_query_init(q));
  check_guard(q, sizeof *q);
  CHECK(q->k == 10 && q->with_row_id && !q->defer_refine && q->element_type == LANCE_ELEMENT_F32);
  q->column = "embedding";
  q->vector = query;
  q->dimension = dim;
  q->k = 5;
  q->nprobes = 4;
  q->columns = id_col;
  q->num_columns = 1;
  q->defer_refine = true; /* last field of the 0.1 layout */
  q->refine_factor = 4;
  LanceVectorQuery* qin = (LanceVectorQuery*)exact_copy(q, sizeof *q);
  free(q);
  CHECK_OK(lance_dataset_plan_vector_search(ds, "embedding", LANCE_METRIC_L2, true, 0, &plan));
  struct ArrowArrayStream approx[16], exact[17];
  size_t na = 0, ne = 0;
  for (size_t i = 0; i < lance_split_plan_count(plan) && i < 16; i++) {
    LanceSplit* sp = lance_split_plan_get(plan, i);
    if (i == 0) {
      CHECK_OK(lance_split_explain_search(ds, sp, qin, &text));
      CHECK(strlen(text) > 0);
      lance_string_free(text);
    }
    if (lance_split_kind(sp) == LANCE_SPLIT_INDEX_SEGMENT) CHECK_OK(lance_split_search(ds, sp, qin, &approx[na++]));
    else CHECK_OK(lance_split_search(ds, sp, qin, &exact[ne++]));
    lance_split_free(sp);
  }
  lance_split_plan_free(plan);
  CHECK(na == 2);
  struct ArrowArrayStream candidates, merged;
  CHECK_OK(lance_topk_merge(approx, na, 5 * 4, 0, &candidates));
  CHECK_OK(lance_dataset_refine(ds, qin, &candidates, &exact[ne++]));
  CHECK_OK(lance_topk_merge(exact, ne, 5, 0, &merged));
  CHECK_EQ_U64(first_i64(&merged, "id"), 777);
  free(qin);

  /* Bad inputs through the 0.1 entry points: codes as documented, outputs untouched. */
  CHECK(lance_scan_options_init(NULL) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(lance_vector_query_init(NULL) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(lance_session_options_default(NULL) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(lance_session_stats(NULL) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(lance_session_configure(NULL) == LANCE_ERR_INVALID_ARGUMENT);
  {
    struct ArrowArrayStream st;
    CHECK_OK(lance_dataset_scan(ds, NULL, &st)); /* NULL options = defaults */
    CHECK_EQ_U64(drain_stream(&st, NULL, NULL, NULL, NULL), total);
    CHECK_OK(lance_dataset_plan_vector_search(ds, "embedding", LANCE_METRIC_L2, true, 0, &plan));
    LanceSplit* sp = lance_split_plan_get(plan, 0);
    CHECK(lance_split_search(ds, sp, NULL, &st) == LANCE_ERR_INVALID_ARGUMENT);
    CHECK(strstr(lance_last_error_message(), "query") != NULL);
    lance_split_free(sp);
    lance_split_plan_free(plan);
    LanceIoStats* bio = (LanceIoStats*)guarded(sizeof *bio);
    memset(bio, 0x5A, sizeof *bio);
    n = 12345;
    CHECK(lance_dataset_count_rows_where(ds, "no_such_column = 1", &n, bio) == LANCE_ERR_INVALID_ARGUMENT);
    CHECK(n == 12345 && bio->read_requests == 0x5A5A5A5A5A5A5A5Aull && bio->index_cache_misses == 0x5A5A5A5A5A5A5A5Aull);
    check_guard(bio, sizeof *bio);
    free(bio);
    LanceTableStats* st2 = NULL;
    CHECK_OK(lance_dataset_statistics(ds, &st2, NULL));
    LanceFragmentStats* fs = (LanceFragmentStats*)guarded(sizeof *fs);
    CHECK(lance_table_stats_fragment(st2, nfrags, fs) == LANCE_ERR_INVALID_ARGUMENT);
    CHECK(fs->fragment_id == 0 && fs->physical_rows == 0);
    check_guard(fs, sizeof *fs);
    free(fs);
    lance_table_stats_free(st2);
  }

  LanceSessionStats* ss = (LanceSessionStats*)guarded(sizeof *ss);
  CHECK_OK(lance_session_stats(ss));
  check_guard(ss, sizeof *ss);
  CHECK(ss->index_entries > 0 && ss->index_bytes > 0 && ss->index_bytes <= 300ull << 20);
  free(ss);

  lance_fragment_info_list_free(frags, nfrags);
  free(io);
  free(o);
  lance_dataset_free(ds);
  printf("abi_0_1: ok (0.1 caller on library %s)\n", lance_host_version());
  return 0;
}
