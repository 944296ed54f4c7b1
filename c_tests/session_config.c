/* Configure the process-wide session before first use, in a fresh process.
 * argv[1] = warehouse directory. */
#include "test_util.h"

int main(int argc, char** argv) {
  CHECK(argc == 2);
  LanceSessionOptions opts;
  CHECK_OK(lance_session_options_default_v2(&opts, sizeof(LanceSessionOptions)));
  CHECK(opts.worker_threads >= 1);

  LanceSessionOptions bad = opts;
  bad.worker_threads = 0;
  CHECK(lance_session_configure_v2(&bad) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(strstr(lance_last_error_message(), "worker_threads") != NULL);
  CHECK(lance_session_configure_v2(NULL) == LANCE_ERR_INVALID_ARGUMENT);

  opts.worker_threads = 2;
  opts.index_cache_bytes = 128u << 20;
  opts.metadata_cache_bytes = 64u << 20;
  CHECK_OK(lance_session_configure_v2(&opts));
  CHECK_OK(lance_session_configure_v2(&opts)); /* same values again: fine */
  LanceSessionOptions other = opts;
  other.metadata_cache_bytes += 1;
  CHECK(lance_session_configure_v2(&other) == LANCE_ERR_FAILED_PRECONDITION);

  char uri[4096];
  snprintf(uri, sizeof uri, "%s/events.lance", argv[1]);
  LanceDataset* ds = lance_dataset_open(uri, NULL, 0);
  CHECK(ds != NULL);
  CHECK(lance_session_configure_v2(&opts) == LANCE_ERR_FAILED_PRECONDITION);

  LanceSessionStats stats = {.struct_size = sizeof(LanceSessionStats)};
  CHECK_OK(lance_session_stats_v2(&stats));
  CHECK(stats.metadata_entries > 0);
  uint64_t rows = 0;
  CHECK_OK(lance_dataset_count_rows(ds, &rows)); /* still works after the rejected call */
  Facts facts;
  facts_load(&facts, argv[1]);
  CHECK_EQ_U64(rows, facts_u64(&facts, "events.v2.rows"));
  lance_dataset_free(ds);
  printf("session_config: ok\n");
  return 0;
}
