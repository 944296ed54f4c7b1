/* What a host's planner and executor use beyond rows, through the C ABI: exact counts of the
 * table and of every scan split (with and without a filter, checked against scans), planner
 * statistics, explain text, cancelling a stream from another thread and call contexts
 * (cancel, deadline). Run under valgrind too: everything returned is freed. */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "test_util.h"

static unsigned long long scan_count(LanceDataset* ds, const char* filter, const uint64_t* frags,
                                     size_t nfrags) {
  LanceScanOptions o;
  CHECK_OK(lance_scan_options_init_v2(&o, sizeof(LanceScanOptions)));
  const char* cols[] = {"id"};
  o.columns = cols;
  o.num_columns = 1;
  o.filter_sql = filter;
  o.fragment_ids = frags;
  o.num_fragment_ids = nfrags;
  struct ArrowArrayStream st;
  CHECK_OK(lance_dataset_scan_v2(ds, &o, &st));
  return drain_stream(&st, NULL, NULL, NULL, NULL); /* releases the stream */
}

static int log_records = 0;
static void count_log(int32_t level, const char* target, const char* message, void* user_data) {
  (void)target;
  (void)message;
  CHECK(level >= LANCE_LOG_ERROR && level <= LANCE_LOG_DEBUG);
  CHECK(user_data == &log_records);
  __atomic_add_fetch(&log_records, 1, __ATOMIC_RELAXED);
}

static uint64_t metric(const char* wanted) {
  for (size_t i = 0; i < lance_metric_count(); i++) {
    const char* name = NULL;
    uint64_t value = 0;
    CHECK_OK(lance_metric(i, &name, &value));
    if (strcmp(name, wanted) == 0) return value;
  }
  fprintf(stderr, "metric %s missing\n", wanted);
  exit(1);
}

static void* cancel_later(void* arg) {
  struct timespec t = {0, 50 * 1000 * 1000};
  nanosleep(&t, NULL);
  CHECK_OK(lance_stream_cancel((const struct ArrowArrayStream*)arg));
  return NULL;
}

int main(int argc, char** argv) {
  CHECK(argc == 2);
  Facts facts;
  facts_load(&facts, argv[1]);
  char uri[4096];
  facts_get(&facts, "vectors.uri", uri, sizeof uri);
  /* Lance's log records reach the host's callback (nothing goes to stdout/stderr). */
  CHECK_OK(lance_log_set_callback(count_log, &log_records, LANCE_LOG_DEBUG));
  uint64_t opens = metric("ops.open"), rows_before = metric("stream.rows");
  LanceDataset* ds = lance_dataset_open(uri, NULL, 0);
  CHECK(ds != NULL);
  CHECK(metric("ops.open") == opens + 1);

  /* Counts: table, filters, every scan split; they add up. */
  uint64_t all = 0, n = 0;
  LanceIoStats io = {.struct_size = sizeof(LanceIoStats)};
  CHECK_OK(lance_dataset_count_rows_where_v2(ds, NULL, &all, &io));
  CHECK_EQ_U64(all, facts_u64(&facts, "vectors.rows"));
  CHECK_EQ_U64(all, scan_count(ds, NULL, NULL, 0));
  const char* filters[] = {"id < 500", "category = 'rare'", "id % 3 = 0"};
  LanceSplitPlan* plan = NULL;
  CHECK_OK(lance_dataset_plan_scan(ds, 0, &plan));
  for (size_t f = 0; f < 3; f++) {
    CHECK_OK(lance_dataset_count_rows_where_v2(ds, filters[f], &n, NULL));
    CHECK_EQ_U64(n, scan_count(ds, filters[f], NULL, 0));
    uint64_t by_split = 0;
    for (size_t i = 0; i < lance_split_plan_count(plan); i++) {
      LanceSplit* s = lance_split_plan_get(plan, i);
      uint64_t c = 0;
      CHECK_OK(lance_split_count_rows_v2(ds, s, filters[f], &c, NULL));
      size_t nf = 0;
      const uint64_t* ids = lance_split_fragment_ids(s, &nf);
      CHECK_EQ_U64(c, scan_count(ds, filters[f], ids, nf));
      by_split += c;
      lance_split_free(s);
    }
    CHECK_EQ_U64(by_split, n);
  }
  lance_split_plan_free(plan);
  CHECK(lance_dataset_count_rows_where_v2(ds, "no_such_column = 1", &n, NULL) == LANCE_ERR_INVALID_ARGUMENT);

  /* Statistics: visible rows per fragment equal a scan of the fragment. */
  LanceTableStats* stats = NULL;
  CHECK_OK(lance_dataset_statistics_v2(ds, &stats, NULL));
  CHECK(lance_table_stats_fragment_count(stats) == facts_u64(&facts, "vectors.fragments"));
  for (size_t i = 0; i < lance_table_stats_fragment_count(stats); i++) {
    LanceFragmentStats fs = {.struct_size = sizeof(LanceFragmentStats)};
    CHECK_OK(lance_table_stats_fragment_v2(stats, i, &fs));
    CHECK(fs.has_bytes_on_disk && fs.bytes_on_disk > 0);
    CHECK_EQ_U64(fs.physical_rows - fs.deleted_rows, scan_count(ds, NULL, &fs.fragment_id, 1));
  }
  int saw_embedding = 0;
  for (size_t i = 0; i < lance_table_stats_column_count(stats); i++) {
    LanceColumnStats cs = {.struct_size = sizeof(LanceColumnStats)};
    CHECK_OK(lance_table_stats_column_v2(stats, i, &cs));
    CHECK(cs.has_bytes_on_disk && cs.bytes_on_disk > 0);
    saw_embedding |= strcmp(cs.name, "embedding") == 0;
  }
  CHECK(saw_embedding);
  lance_table_stats_free(stats);

  /* Shipped snapshot: a worker opens the coordinator's token and sees the same table. */
  uint8_t* token = NULL;
  size_t token_len = 0;
  CHECK_OK(lance_dataset_export_snapshot(ds, &token, &token_len));
  LanceDataset* worker = lance_snapshot_open(token, token_len, NULL);
  CHECK(worker != NULL);
  CHECK_EQ_U64(lance_dataset_version(worker), lance_dataset_version(ds));
  CHECK_OK(lance_dataset_count_rows_where_v2(worker, NULL, &n, NULL));
  CHECK_EQ_U64(n, all);
  lance_dataset_free(worker);
  token[token_len / 2] ^= 0x10;
  CHECK(lance_snapshot_open(token, token_len, NULL) == NULL);
  CHECK(lance_last_error_code() == LANCE_ERR_CORRUPT);
  lance_bytes_free(token, token_len);

  /* Split-scoped tokens: each split's own token counts that split; together they count the
   * table; a whole-table count on one is refused. */
  LanceSplitPlan* scoped_plan = NULL;
  CHECK_OK(lance_dataset_plan_scan(ds, 0, &scoped_plan));
  uint64_t scoped_total = 0;
  for (size_t i = 0; i < lance_split_plan_count(scoped_plan); i++) {
    LanceSplit* sp = lance_split_plan_get(scoped_plan, i);
    CHECK(sp != NULL);
    CHECK_OK(lance_dataset_export_split_snapshot(ds, sp, &token, &token_len));
    LanceDataset* part = lance_snapshot_open(token, token_len, NULL);
    lance_bytes_free(token, token_len);
    CHECK(part != NULL);
    uint64_t k = 0;
    CHECK_OK(lance_split_count_rows_v2(part, sp, NULL, &k, NULL));
    scoped_total += k;
    CHECK(lance_dataset_count_rows_where_v2(part, NULL, &n, NULL) == LANCE_ERR_INVALID_ARGUMENT);
    CHECK(strstr(lance_last_error_message(), "split-scoped") != NULL);
    lance_dataset_free(part);
    lance_split_free(sp);
  }
  lance_split_plan_free(scoped_plan);
  CHECK_EQ_U64(scoped_total, all);

  /* Explain: the BTREE answers `id < 100`. */
  LanceScanOptions o;
  CHECK_OK(lance_scan_options_init_v2(&o, sizeof(LanceScanOptions)));
  o.filter_sql = "id < 100";
  char* text = NULL;
  CHECK_OK(lance_dataset_explain_scan_v2(ds, &o, &text));
  CHECK(strstr(text, "ScalarIndexQuery") != NULL);
  lance_string_free(text);

  /* Cancel a stream from another thread; get_next reports ECANCELED, release frees it. */
  struct ArrowArrayStream st;
  CHECK_OK(lance_dataset_scan_v2(ds, NULL, &st));
  pthread_t th;
  CHECK(pthread_create(&th, NULL, cancel_later, &st) == 0);
  CHECK(pthread_join(th, NULL) == 0);
  struct ArrowArray arr;
  int rc = st.get_next(&st, &arr);
  CHECK(rc == ECANCELED);
  CHECK(strstr(st.get_last_error(&st), "cancelled") != NULL);
  st.release(&st);

  /* Call contexts: a cancelled one stops blocking calls on this thread; a past deadline too. */
  LanceCallContext* ctx = lance_call_context_new(0);
  CHECK(ctx != NULL);
  CHECK_OK(lance_call_context_cancel(ctx));
  CHECK_OK(lance_call_context_enter(ctx));
  CHECK(lance_dataset_count_rows_where_v2(ds, NULL, &n, NULL) == LANCE_ERR_CANCELLED);
  CHECK_OK(lance_call_context_enter(NULL));
  lance_call_context_free(ctx);
  ctx = lance_call_context_new(1);
  struct timespec t = {0, 5 * 1000 * 1000};
  nanosleep(&t, NULL);
  CHECK_OK(lance_call_context_enter(ctx));
  CHECK(lance_dataset_open(uri, NULL, 0) == NULL);
  CHECK(lance_last_error_code() == LANCE_ERR_TIMEOUT);
  lance_call_context_free(ctx); /* still bound: the binding keeps it */
  CHECK(lance_dataset_count_rows_where_v2(ds, NULL, &n, NULL) == LANCE_ERR_TIMEOUT);
  CHECK_OK(lance_call_context_enter(NULL));
  CHECK_OK(lance_dataset_count_rows_where_v2(ds, NULL, &n, NULL));

  CHECK(metric("stream.rows") > rows_before);
  CHECK(__atomic_load_n(&log_records, __ATOMIC_RELAXED) > 0);
  CHECK_OK(lance_log_set_callback(NULL, NULL, LANCE_LOG_OFF));
  lance_dataset_free(ds);
  printf("engine_test: ok (%llu rows, %d log records)\n", (unsigned long long)all, log_records);
  return 0;
}
