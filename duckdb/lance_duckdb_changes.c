/* lance_host DuckDB extension: lance_changes. */
#include "lance_duckdb.h"

void changes_bind(duckdb_bind_info info) {
  BindData* b = (BindData*)calloc(1, sizeof(BindData));
  duckdb_bind_set_bind_data(info, b, free_bind);
  b->is_search = KIND_CHANGES;
  char* uri = varchar_arg(info, 0);
  duckdb_value v = duckdb_bind_get_parameter(info, 1);
  int64_t since = duckdb_get_int64(v);
  duckdb_destroy_value(&v);
  v = duckdb_bind_get_parameter(info, 2);
  int64_t version = duckdb_get_int64(v);
  duckdb_destroy_value(&v);
  uint64_t ignored = 0;
  if (since < 0 || version < 0) {
    duckdb_bind_set_error(info, "lance_changes: versions must not be negative");
  } else if (bind_named(info, b, &ignored)) {
    b->since_version = (uint64_t)since;
    bind_open(info, b, uri, (uint64_t)version);
    if (b->ds && bind_columns(info, b)) {
      const char* formats[4] = {"L", "L", "L", "u"};
      for (int i = 0; i < 4 && b->ncols < MAX_COLUMNS; i++) {
        Column* c = &b->cols[b->ncols++];
        c->name = dup_str(change_meta[i]);
        c->format = dup_str(formats[i]);
        c->supported = 1;
        duckdb_logical_type t = duckdb_create_logical_type(i < 3 ? DUCKDB_TYPE_UBIGINT : DUCKDB_TYPE_VARCHAR);
        duckdb_bind_add_result_column(info, change_meta[i], t);
        duckdb_destroy_logical_type(&t);
      }
    }
  }
  free(uri);
}

void changes_init(duckdb_init_info info) {
  BindData* b = (BindData*)duckdb_init_get_bind_data(info);
  GlobalState* g = begin_init(info, b);
  if (!g) return;
  LanceChangesParams p;
  lance_changes_params_init_v2(&p, sizeof p);
  p.since_version = b->since_version;
  if (lance_dataset_plan_changes(b->ds, &p, &g->plan) != LANCE_OK) {
    duckdb_init_set_error(info, lance_last_error_message());
    return;
  }
  g->nsplits = lance_split_plan_count(g->plan);
  atomic_init(&g->next_split, 0);
  duckdb_init_set_max_threads(info, g->nsplits ? g->nsplits : 1);
}

int register_changes_function(duckdb_connection con) {
  duckdb_table_function f = duckdb_create_table_function();
  duckdb_table_function_set_name(f, "lance_changes");
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
  duckdb_table_function_add_parameter(f, varchar); /* uri */
  duckdb_table_function_add_parameter(f, bigint);  /* since version */
  duckdb_table_function_add_parameter(f, bigint);  /* version (0 = latest) */
  duckdb_table_function_add_named_parameter(f, "branch", varchar);
  duckdb_table_function_set_bind(f, changes_bind);
  duckdb_table_function_set_init(f, changes_init);
  duckdb_table_function_set_local_init(f, scan_local_init);
  duckdb_table_function_set_function(f, scan_function);
  duckdb_table_function_supports_projection_pushdown(f, true);
  duckdb_state st = duckdb_register_table_function(con, f);
  duckdb_destroy_logical_type(&varchar);
  duckdb_destroy_logical_type(&bigint);
  duckdb_destroy_table_function(&f);
  return st == DuckDBSuccess;
}
