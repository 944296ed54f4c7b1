/* lance_host DuckDB extension: lance_scan. */
#include "lance_duckdb.h"

void scan_bind(duckdb_bind_info info) {
  BindData* b = (BindData*)calloc(1, sizeof(BindData));
  duckdb_bind_set_bind_data(info, b, free_bind);
  duckdb_value v = duckdb_bind_get_parameter(info, 0);
  char* uri = varchar_param(v);
  duckdb_destroy_value(&v);
  uint64_t version = 0;
  if (bind_named(info, b, &version) && bind_keys(info, b)) {
    bind_open(info, b, uri, version);
    if (b->ds) bind_columns(info, b);
  }
  free(uri);
}

void scan_init(duckdb_init_info info) {
  BindData* b = (BindData*)duckdb_init_get_bind_data(info);
  GlobalState* g = begin_init(info, b);
  if (!g) return;
  if (lance_dataset_plan_scan(b->ds, 0, &g->plan) != LANCE_OK) {
    duckdb_init_set_error(info, lance_last_error_message());
    return;
  }
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  uint64_t rows = 0;
  if (cores > 1 && lance_split_plan_count(g->plan) < (size_t)cores &&
      lance_dataset_count_rows(b->ds, &rows) == LANCE_OK && rows >= 2 * (uint64_t)cores) {
    LanceSplitPlan* sliced = NULL;
    if (lance_dataset_plan_scan_slices(b->ds, (rows + (uint64_t)cores - 1) / (uint64_t)cores, &sliced) != LANCE_OK) {
      duckdb_init_set_error(info, lance_last_error_message());
      return;
    }
    if (lance_split_plan_count(sliced) > lance_split_plan_count(g->plan)) {
      lance_split_plan_free(g->plan);
      g->plan = sliced;
    } else {
      lance_split_plan_free(sliced);
    }
  }
  g->nsplits = lance_split_plan_count(g->plan);
  atomic_init(&g->next_split, 0);
  duckdb_init_set_max_threads(info, g->nsplits ? g->nsplits : 1);
}

void scan_local_init(duckdb_init_info info) {
  duckdb_init_set_init_data(info, calloc(1, sizeof(LocalState)), free_local);
}
