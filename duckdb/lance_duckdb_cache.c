/* lance_host DuckDB extension: lance_data_cache. */
#include "lance_duckdb.h"

/* lance_host_data_cache: the figures, read at bind. */
static const char* cache_names[CACHE_FIGURES] = {
    "memory_capacity", "disk_capacity", "disk_enabled", "hits", "misses", "hit_bytes", "storage_requests",
    "storage_bytes", "evictions", "errors", "memory_bytes", "disk_bytes", "disk_write_drops"};


int cache_u64_param(duckdb_bind_info info, const char* name, uint64_t* out) {
  duckdb_value v = duckdb_bind_get_named_parameter(info, name);
  if (!v) return 0;
  int64_t n = duckdb_get_int64(v);
  duckdb_destroy_value(&v);
  *out = n < 0 ? UINT64_MAX : (uint64_t)n; /* negative: rejected by lance-host as too large */
  return 1;
}

void cache_bind(duckdb_bind_info info) {
  LanceSessionOptions o;
  if (lance_session_options_default_v2(&o, sizeof o) != LANCE_OK) {
    duckdb_bind_set_error(info, lance_last_error_message());
    return;
  }
  int given = 0;
  given |= cache_u64_param(info, "memory_bytes", &o.data_cache_memory_bytes);
  given |= cache_u64_param(info, "block_bytes", &o.data_cache_block_bytes);
  given |= cache_u64_param(info, "disk_bytes", &o.data_cache_disk_bytes);
  char* dir = NULL;
  duckdb_value v = duckdb_bind_get_named_parameter(info, "disk_dir");
  if (v) {
    dir = varchar_param(v);
    duckdb_destroy_value(&v);
    o.data_cache_disk_dir = dir;
    given = 1;
  }
  v = duckdb_bind_get_named_parameter(info, "disabled");
  if (v) {
    o.data_cache_disabled = duckdb_get_bool(v) ? 1 : 0;
    duckdb_destroy_value(&v);
    given = 1;
  }
  int rc = given ? lance_session_configure_v2(&o) : LANCE_OK;
  free(dir);
  if (rc != LANCE_OK) {
    char msg[4096];
    snprintf(msg, sizeof msg, "lance_host_data_cache: %s", lance_last_error_message());
    duckdb_bind_set_error(info, msg);
    return;
  }
  LanceSessionStats st = {.struct_size = sizeof st};
  if (lance_session_stats_v2(&st) != LANCE_OK) {
    duckdb_bind_set_error(info, lance_last_error_message());
    return;
  }
  CacheRow* row = (CacheRow*)calloc(1, sizeof(CacheRow));
  uint64_t values[CACHE_FIGURES] = {st.data_cache_memory_capacity, st.data_cache_disk_capacity,
                                    st.data_cache_disk_enabled, st.data_cache_hits, st.data_cache_misses,
                                    st.data_cache_hit_bytes, st.data_cache_storage_requests,
                                    st.data_cache_storage_bytes, st.data_cache_evictions, st.data_cache_errors,
                                    st.data_cache_memory_bytes, st.data_cache_disk_bytes,
                                    st.data_cache_disk_write_drops};
  memcpy(row->values, values, sizeof values);
  duckdb_bind_set_bind_data(info, row, free);
  duckdb_logical_type ubig = duckdb_create_logical_type(DUCKDB_TYPE_UBIGINT);
  for (int i = 0; i < CACHE_FIGURES; i++) duckdb_bind_add_result_column(info, cache_names[i], ubig);
  duckdb_destroy_logical_type(&ubig);
}

void cache_init(duckdb_init_info info) { (void)info; }

void cache_function(duckdb_function_info info, duckdb_data_chunk output) {
  CacheRow* row = (CacheRow*)duckdb_function_get_bind_data(info);
  if (row->done) {
    duckdb_data_chunk_set_size(output, 0);
    return;
  }
  for (int i = 0; i < CACHE_FIGURES; i++)
    ((uint64_t*)duckdb_vector_get_data(duckdb_data_chunk_get_vector(output, i)))[0] = row->values[i];
  duckdb_data_chunk_set_size(output, 1);
  row->done = 1;
}

int register_cache_function(duckdb_connection con) {
  duckdb_table_function f = duckdb_create_table_function();
  duckdb_table_function_set_name(f, "lance_host_data_cache");
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
  duckdb_logical_type boolean = duckdb_create_logical_type(DUCKDB_TYPE_BOOLEAN);
  duckdb_table_function_add_named_parameter(f, "memory_bytes", bigint);
  duckdb_table_function_add_named_parameter(f, "block_bytes", bigint);
  duckdb_table_function_add_named_parameter(f, "disk_bytes", bigint);
  duckdb_table_function_add_named_parameter(f, "disk_dir", varchar);
  duckdb_table_function_add_named_parameter(f, "disabled", boolean);
  duckdb_table_function_set_bind(f, cache_bind);
  duckdb_table_function_set_init(f, cache_init);
  duckdb_table_function_set_function(f, cache_function);
  duckdb_state st = duckdb_register_table_function(con, f);
  duckdb_destroy_logical_type(&varchar);
  duckdb_destroy_logical_type(&bigint);
  duckdb_destroy_logical_type(&boolean);
  duckdb_destroy_table_function(&f);
  return st == DuckDBSuccess;
}

/* lance_changes(uri, since_version, version [, branch := 'name']): the rows changed after
   `since_version` up to `version` (0 = latest), one change split per fragment group plus the
   deleted rows, read in parallel like lance_scan. */
