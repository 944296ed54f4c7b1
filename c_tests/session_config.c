/* Configure the process-wide session before first use, in a fresh process.
 * argv[1] = warehouse directory. */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>
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

  /* Data cache settings: defaults, then the checks on bad values. */
  CHECK(opts.data_cache_memory_bytes == (256u << 20));
  CHECK(opts.data_cache_block_bytes == (64u << 10));
  CHECK(opts.data_cache_disk_dir == NULL && opts.data_cache_disk_bytes == 0 && opts.data_cache_disabled == 0);
  bad = opts;
  bad.data_cache_block_bytes = 3000;
  CHECK(lance_session_configure_v2(&bad) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(strstr(lance_last_error_message(), "data_cache_block_bytes") != NULL);
  bad = opts;
  bad.data_cache_disk_bytes = 1u << 30; /* a disk budget without a directory */
  CHECK(lance_session_configure_v2(&bad) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(strstr(lance_last_error_message(), "data_cache_disk_dir") != NULL);
  bad = opts;
  bad.data_cache_disk_dir = "/tmp";
  bad.data_cache_disk_bytes = 4096; /* below 64 blocks */
  CHECK(lance_session_configure_v2(&bad) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(strstr(lance_last_error_message(), "minimum") != NULL);
  bad = opts;
  bad.data_cache_disk_dir = "\xff\xfe";
  CHECK(lance_session_configure_v2(&bad) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(strstr(lance_last_error_message(), "UTF-8") != NULL);

  char cache_dir[] = "/tmp/lance-host-cache-XXXXXX";
  CHECK(mkdtemp(cache_dir) != NULL);
  opts.worker_threads = 2;
  opts.index_cache_bytes = 128u << 20;
  opts.metadata_cache_bytes = 64u << 20;
  opts.data_cache_memory_bytes = 32u << 20;
  opts.data_cache_block_bytes = 16u << 10;
  opts.data_cache_disk_dir = cache_dir;
  opts.data_cache_disk_bytes = 16u << 20;
  CHECK_OK(lance_session_configure_v2(&opts));
  CHECK_OK(lance_session_configure_v2(&opts)); /* same values again: fine */
  LanceSessionOptions other = opts;
  other.metadata_cache_bytes += 1;
  CHECK(lance_session_configure_v2(&other) == LANCE_ERR_FAILED_PRECONDITION);

  char uri[4096];
  snprintf(uri, sizeof uri, "%s/events.lance", argv[1]);
  /* Lance's own environment settings are checked when the session starts: a value Lance would
   * panic on is LANCE_ERR_INVALID_ARGUMENT naming the variable, nothing starts, and the first
   * call after it is corrected starts the session as configured. (setenv is safe here: the
   * process has one thread until the session starts.) */
  CHECK(setenv("LANCE_MAX_IOP_SIZE", "16MiB", 1) == 0);
  CHECK(lance_dataset_open(uri, NULL, 0) == NULL);
  CHECK(lance_last_error_code() == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(strstr(lance_last_error_message(), "LANCE_MAX_IOP_SIZE") != NULL);
  CHECK(strstr(lance_last_error_message(), "\"16MiB\"") != NULL);
  CHECK(unsetenv("LANCE_MAX_IOP_SIZE") == 0);
  CHECK(setenv("LANCE_IVF_STREAMING_SEARCH_BATCH_SIZE", "0", 1) == 0);
  CHECK(lance_dataset_open(uri, NULL, 0) == NULL);
  CHECK(lance_last_error_code() == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(strstr(lance_last_error_message(), "LANCE_IVF_STREAMING_SEARCH_BATCH_SIZE") != NULL);
  CHECK(setenv("LANCE_IVF_STREAMING_SEARCH_BATCH_SIZE", "8", 1) == 0);
  LanceDataset* ds = lance_dataset_open(uri, NULL, 0);
  CHECK(ds != NULL);
  CHECK(lance_session_configure_v2(&opts) == LANCE_ERR_FAILED_PRECONDITION);

  LanceSessionStats stats = {.struct_size = sizeof(LanceSessionStats)};
  CHECK_OK(lance_session_stats_v2(&stats));
  CHECK(stats.metadata_entries > 0);
  /* The data cache runs with the configured budgets and its disk tier; a local table does
   * not go through it. */
  CHECK_EQ_U64(stats.data_cache_memory_capacity, 32u << 20);
  CHECK_EQ_U64(stats.data_cache_disk_capacity, 16u << 20);
  CHECK_EQ_U64(stats.data_cache_disk_enabled, 1);
  CHECK_EQ_U64(stats.data_cache_hits + stats.data_cache_misses, 0);
  CHECK_OK(lance_session_flush_data_cache());
  uint64_t rows = 0;
  CHECK_OK(lance_dataset_count_rows(ds, &rows)); /* still works after the rejected call */
  Facts facts;
  facts_load(&facts, argv[1]);
  CHECK_EQ_U64(rows, facts_u64(&facts, "events.v2.rows"));
  lance_dataset_free(ds);
  char lock[4200];
  snprintf(lock, sizeof lock, "%s/lance-host-data-cache.lock", cache_dir);
  CHECK(access(lock, F_OK) == 0); /* the disk tier holds its directory */
  char rm[4300];
  snprintf(rm, sizeof rm, "rm -rf '%s'", cache_dir);
  CHECK(system(rm) == 0);
  printf("session_config: ok\n");
  return 0;
}
