/* Writes from DuckDB through lance-host (part of the lance_host extension). Table functions that
 * return one row:
 *
 *   lance_write(uri, query [, mode := 'create'|'append'|'overwrite'] [, max_rows_per_file := n]
 *               [, commit_message := 'text'])
 *       runs the SQL `query` (a string) on a connection of its own to this database and writes
 *       its result to the Lance table at `uri` as ONE new version (lance_table_write): a new
 *       table (create, the default), rows added (append), or the rows replaced (overwrite).
 *       Returns version, rows_written, files_written, bytes_written. The write happens while
 *       the statement is bound, so it runs once however the row is used.
 *   lance_delete(uri, predicate)
 *       deletes the rows matching the Lance SQL `predicate` as one new version
 *       (lance_dataset_delete). Returns version, rows_deleted.
 *   lance_create_index(uri, column, index_type [, name := 'n'] [, replace := true]
 *                      [, metric := 'l2'|'cosine'|'dot'] [, num_partitions := n]
 *                      [, num_sub_vectors := n] [, with_position := true])
 *       builds an index as one new version: index_type 'IVF_PQ', 'IVF_FLAT', 'IVF_SQ',
 *       'IVF_HNSW_FLAT', 'IVF_HNSW_PQ', 'IVF_HNSW_SQ', 'BTREE', 'BITMAP', 'LABEL_LIST' or
 *       'INVERTED' (Lance's defaults for what is not given). Returns version.
 *   lance_drop_index(uri, name)
 *       drops an index as one new version. Returns version.
 *
 * DuckDB's C extension API (v1.5.6) has no COPY TO function and no way for a table function to
 * receive another query's rows, and a function cannot open a connection of its own (the
 * database handle is lent to the extension only while it loads). So the extension opens one
 * connection when it is loaded and keeps it: `lance_write` runs its query text there (one
 * lance_write at a time) and reads the result as Arrow C data (duckdb_query_arrow). It sees
 * what is committed in the database, not the calling transaction's uncommitted changes, and
 * the kept connection holds the database open until the process exits. */
#include "duckdb_extension.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lance_host.h"

DUCKDB_EXTENSION_EXTERN

/* The connection lance_write runs its queries on (opened while the extension loads), and the
 * lock that lets one lance_write use it at a time. */
static duckdb_connection g_con;
static pthread_mutex_t g_con_lock = PTHREAD_MUTEX_INITIALIZER;

int lance_duckdb_write_connect(duckdb_database db) { return db && duckdb_connect(db, &g_con) == DuckDBSuccess; }

/* ---- a query's Arrow result as an ArrowArrayStream ------------------------------------------ */

typedef struct {
  duckdb_arrow result;
  char error[1024];
} QueryStream;

static int qs_get_schema(struct ArrowArrayStream* s, struct ArrowSchema* out) {
  QueryStream* q = (QueryStream*)s->private_data;
  memset(out, 0, sizeof *out);
  duckdb_arrow_schema p = (duckdb_arrow_schema)out;
  if (duckdb_query_arrow_schema(q->result, &p) != DuckDBSuccess) {
    snprintf(q->error, sizeof q->error, "cannot read the query's schema: %s", duckdb_query_arrow_error(q->result));
    return 5; /* EIO */
  }
  return 0;
}

static int qs_get_next(struct ArrowArrayStream* s, struct ArrowArray* out) {
  QueryStream* q = (QueryStream*)s->private_data;
  memset(out, 0, sizeof *out); /* release stays NULL at the end of the result */
  duckdb_arrow_array p = (duckdb_arrow_array)out;
  if (duckdb_query_arrow_array(q->result, &p) != DuckDBSuccess) {
    snprintf(q->error, sizeof q->error, "the query failed: %s", duckdb_query_arrow_error(q->result));
    return 5;
  }
  return 0;
}

static const char* qs_get_last_error(struct ArrowArrayStream* s) {
  QueryStream* q = (QueryStream*)s->private_data;
  return q->error[0] ? q->error : NULL;
}

static void qs_release(struct ArrowArrayStream* s) {
  QueryStream* q = (QueryStream*)s->private_data;
  if (q) {
    duckdb_destroy_arrow(&q->result);
    free(q);
  }
  s->release = NULL;
}

/* Run `sql` on the kept connection (the caller holds g_con_lock until the stream is released);
 * on success `out` owns the result. */
static int query_stream(const char* sql, struct ArrowArrayStream* out, char* err, size_t err_len) {
  QueryStream* q = (QueryStream*)calloc(1, sizeof(QueryStream));
  if (!q) {
    snprintf(err, err_len, "out of memory");
    return 0;
  }
  if (duckdb_query_arrow(g_con, sql, &q->result) != DuckDBSuccess) {
    snprintf(err, err_len, "the query failed: %s", duckdb_query_arrow_error(q->result));
    duckdb_destroy_arrow(&q->result);
    free(q);
    return 0;
  }
  out->get_schema = qs_get_schema;
  out->get_next = qs_get_next;
  out->get_last_error = qs_get_last_error;
  out->release = qs_release;
  out->private_data = q;
  return 1;
}

/* ---- one-row results ------------------------------------------------------------------------ */

#define MAX_FIGURES 4

typedef struct {
  int count;
  int64_t values[MAX_FIGURES];
  int done;
} OneRow;

static char* string_param(duckdb_bind_info info, idx_t i) {
  duckdb_value v = duckdb_bind_get_parameter(info, i);
  char* s = duckdb_get_varchar(v);
  duckdb_destroy_value(&v);
  return s;
}

static char* named_string(duckdb_bind_info info, const char* name) {
  duckdb_value v = duckdb_bind_get_named_parameter(info, name);
  if (!v) return NULL;
  char* s = duckdb_is_null_value(v) ? NULL : duckdb_get_varchar(v);
  duckdb_destroy_value(&v);
  return s;
}

static void set_lance_error(duckdb_bind_info info, const char* fn) {
  char msg[4096];
  snprintf(msg, sizeof msg, "%s: %s", fn, lance_last_error_message());
  duckdb_bind_set_error(info, msg);
}

static void one_row(duckdb_bind_info info, const char* const* names, const int64_t* values, int count) {
  OneRow* row = (OneRow*)calloc(1, sizeof(OneRow));
  row->count = count;
  memcpy(row->values, values, sizeof(int64_t) * (size_t)count);
  duckdb_bind_set_bind_data(info, row, free);
  duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
  for (int i = 0; i < count; i++) duckdb_bind_add_result_column(info, names[i], bigint);
  duckdb_destroy_logical_type(&bigint);
}

static void one_row_init(duckdb_init_info info) { (void)info; }

static void one_row_function(duckdb_function_info info, duckdb_data_chunk output) {
  OneRow* row = (OneRow*)duckdb_function_get_bind_data(info);
  if (row->done) {
    duckdb_data_chunk_set_size(output, 0);
    return;
  }
  for (int i = 0; i < row->count; i++)
    ((int64_t*)duckdb_vector_get_data(duckdb_data_chunk_get_vector(output, (idx_t)i)))[0] = row->values[i];
  duckdb_data_chunk_set_size(output, 1);
  row->done = 1;
}

/* ---- lance_write ---------------------------------------------------------------------------- */

static void write_bind(duckdb_bind_info info) {
  char* uri = string_param(info, 0);
  char* sql = string_param(info, 1);
  char* mode = named_string(info, "mode");
  char* message = named_string(info, "commit_message");
  LanceWriteParams p;
  lance_write_params_init_v2(&p, sizeof p);
  int ok = 1;
  if (!mode || strcmp(mode, "create") == 0) {
    p.mode = LANCE_WRITE_CREATE;
  } else if (strcmp(mode, "append") == 0) {
    p.mode = LANCE_WRITE_APPEND;
  } else if (strcmp(mode, "overwrite") == 0) {
    p.mode = LANCE_WRITE_OVERWRITE;
  } else {
    duckdb_bind_set_error(info, "lance_write: mode must be 'create', 'append' or 'overwrite'");
    ok = 0;
  }
  duckdb_value rows = duckdb_bind_get_named_parameter(info, "max_rows_per_file");
  if (ok && rows) {
    int64_t n = duckdb_get_int64(rows);
    if (n <= 0) {
      duckdb_bind_set_error(info, "lance_write: max_rows_per_file must be at least 1");
      ok = 0;
    }
    p.max_rows_per_file = (uint64_t)n;
  }
  if (rows) duckdb_destroy_value(&rows);
  p.commit_message = message;
  if (ok) {
    struct ArrowArrayStream data;
    char err[2048];
    pthread_mutex_lock(&g_con_lock);
    if (!query_stream(sql, &data, err, sizeof err)) {
      char msg[2200];
      snprintf(msg, sizeof msg, "lance_write: %s", err);
      duckdb_bind_set_error(info, msg);
    } else {
      LanceWriteResult r = {.struct_size = sizeof r};
      if (lance_table_write(uri, NULL, &data, &p, NULL, &r) != LANCE_OK) {
        set_lance_error(info, "lance_write");
      } else {
        static const char* const names[] = {"version", "rows_written", "files_written", "bytes_written"};
        int64_t values[] = {(int64_t)r.version, (int64_t)r.rows_written, (int64_t)r.files_written,
                            (int64_t)r.bytes_written};
        one_row(info, names, values, 4);
      }
    }
    pthread_mutex_unlock(&g_con_lock); /* lance_table_write released the stream (and the result) */
  }
  duckdb_free(uri);
  duckdb_free(sql);
  duckdb_free(mode);
  duckdb_free(message);
}

/* ---- lance_delete --------------------------------------------------------------------------- */

static void delete_bind(duckdb_bind_info info) {
  char* uri = string_param(info, 0);
  char* predicate = string_param(info, 1);
  LanceDataset* ds = lance_dataset_open(uri, NULL, 0);
  if (!ds) {
    set_lance_error(info, "lance_delete");
  } else {
    LanceWriteResult r = {.struct_size = sizeof r};
    if (lance_dataset_delete(ds, predicate, NULL, NULL, &r) != LANCE_OK) {
      set_lance_error(info, "lance_delete");
    } else {
      static const char* const names[] = {"version", "rows_deleted"};
      int64_t values[] = {(int64_t)r.version, (int64_t)r.rows_deleted};
      one_row(info, names, values, 2);
    }
    lance_dataset_free(ds);
  }
  duckdb_free(uri);
  duckdb_free(predicate);
}

/* ---- lance_create_index / lance_drop_index ------------------------------------------------- */

static int64_t named_int(duckdb_bind_info info, const char* name, int64_t fallback) {
  duckdb_value v = duckdb_bind_get_named_parameter(info, name);
  if (!v) return fallback;
  int64_t n = duckdb_is_null_value(v) ? fallback : duckdb_get_int64(v);
  duckdb_destroy_value(&v);
  return n;
}

static int named_bool(duckdb_bind_info info, const char* name, int fallback) {
  duckdb_value v = duckdb_bind_get_named_parameter(info, name);
  if (!v) return fallback;
  int b = duckdb_is_null_value(v) ? fallback : duckdb_get_bool(v);
  duckdb_destroy_value(&v);
  return b;
}

static const char* const VECTOR_TYPES[] = {"IVF_PQ", "IVF_FLAT", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ", "IVF_HNSW_SQ"};
static const char* const SCALAR_TYPES[] = {"BTREE", "BITMAP", "LABEL_LIST"};

static void create_index_bind(duckdb_bind_info info) {
  char* uri = string_param(info, 0);
  char* column = string_param(info, 1);
  char* type = string_param(info, 2);
  char* name = named_string(info, "name");
  char* metric = named_string(info, "metric");
  int replace = named_bool(info, "replace", 0);
  int64_t partitions = named_int(info, "num_partitions", 0);
  int64_t sub_vectors = named_int(info, "num_sub_vectors", 0);
  int with_position = named_bool(info, "with_position", 0);
  LanceDataset* ds = NULL;
  LanceDataset* out = NULL;
  int rc = LANCE_OK;
  if (partitions < 0 || partitions > 0xffffffffLL || sub_vectors < 0 || sub_vectors > 0xffffffffLL) {
    duckdb_bind_set_error(info, "lance_create_index: num_partitions and num_sub_vectors must be between 0 and 2^32-1");
    goto done;
  }
  ds = lance_dataset_open(uri, NULL, 0);
  if (!ds) {
    set_lance_error(info, "lance_create_index");
    goto done;
  }
  int vector = -1, scalar = -1;
  for (int i = 0; i < 6; i++)
    if (strcasecmp(type, VECTOR_TYPES[i]) == 0) vector = i;
  for (int i = 0; i < 3; i++)
    if (strcasecmp(type, SCALAR_TYPES[i]) == 0) scalar = i;
  if (vector >= 0) {
    LanceVectorIndexParams p;
    lance_vector_index_params_init_v2(&p, sizeof p);
    static const int VECTOR_CODES[] = {LANCE_VECTOR_INDEX_IVF_PQ, LANCE_VECTOR_INDEX_IVF_FLAT,
                                       LANCE_VECTOR_INDEX_IVF_SQ, LANCE_VECTOR_INDEX_IVF_HNSW_FLAT,
                                       LANCE_VECTOR_INDEX_IVF_HNSW_PQ, LANCE_VECTOR_INDEX_IVF_HNSW_SQ};
    p.index_type = VECTOR_CODES[vector];
    p.num_partitions = (uint32_t)partitions;
    p.num_sub_vectors = (uint32_t)sub_vectors;
    if (metric) {
      if (strcasecmp(metric, "l2") == 0) p.metric = LANCE_METRIC_L2;
      else if (strcasecmp(metric, "cosine") == 0) p.metric = LANCE_METRIC_COSINE;
      else if (strcasecmp(metric, "dot") == 0) p.metric = LANCE_METRIC_DOT;
      else {
        duckdb_bind_set_error(info, "lance_create_index: metric must be 'l2', 'cosine' or 'dot'");
        goto done;
      }
    }
    rc = lance_dataset_create_vector_index(ds, column, name, replace, &p, &out);
  } else if (scalar >= 0) {
    LanceScalarIndexParams p;
    lance_scalar_index_params_init_v2(&p, sizeof p);
    static const int SCALAR_CODES[] = {LANCE_SCALAR_INDEX_BTREE, LANCE_SCALAR_INDEX_BITMAP,
                                       LANCE_SCALAR_INDEX_LABEL_LIST};
    p.index_type = SCALAR_CODES[scalar];
    rc = lance_dataset_create_scalar_index(ds, column, name, replace, &p, &out);
  } else if (strcasecmp(type, "INVERTED") == 0) {
    LanceInvertedIndexParams p;
    lance_inverted_index_params_init_v2(&p, sizeof p);
    p.with_position = with_position ? 1 : 0;
    rc = lance_dataset_create_inverted_index(ds, column, name, replace, &p, &out);
  } else {
    duckdb_bind_set_error(info,
                          "lance_create_index: index_type must be one of IVF_PQ, IVF_FLAT, IVF_SQ, IVF_HNSW_FLAT, "
                          "IVF_HNSW_PQ, IVF_HNSW_SQ, BTREE, BITMAP, LABEL_LIST, INVERTED");
    goto done;
  }
  if (rc != LANCE_OK) {
    set_lance_error(info, "lance_create_index");
  } else {
    static const char* const names[] = {"version"};
    int64_t values[] = {(int64_t)lance_dataset_version(out)};
    one_row(info, names, values, 1);
  }
done:
  if (out) lance_dataset_free(out);
  if (ds) lance_dataset_free(ds);
  duckdb_free(uri);
  duckdb_free(column);
  duckdb_free(type);
  duckdb_free(name);
  duckdb_free(metric);
}

static void drop_index_bind(duckdb_bind_info info) {
  char* uri = string_param(info, 0);
  char* name = string_param(info, 1);
  LanceDataset* ds = lance_dataset_open(uri, NULL, 0);
  LanceDataset* out = NULL;
  if (!ds || lance_dataset_drop_index(ds, name, &out) != LANCE_OK) {
    set_lance_error(info, "lance_drop_index");
  } else {
    static const char* const names[] = {"version"};
    int64_t values[] = {(int64_t)lance_dataset_version(out)};
    one_row(info, names, values, 1);
  }
  if (out) lance_dataset_free(out);
  if (ds) lance_dataset_free(ds);
  duckdb_free(uri);
  duckdb_free(name);
}

static int register_index_functions(duckdb_connection con) {
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
  duckdb_logical_type boolean = duckdb_create_logical_type(DUCKDB_TYPE_BOOLEAN);
  duckdb_table_function f = duckdb_create_table_function();
  duckdb_table_function_set_name(f, "lance_create_index");
  for (int i = 0; i < 3; i++) duckdb_table_function_add_parameter(f, varchar); /* uri, column, type */
  duckdb_table_function_add_named_parameter(f, "name", varchar);
  duckdb_table_function_add_named_parameter(f, "metric", varchar);
  duckdb_table_function_add_named_parameter(f, "replace", boolean);
  duckdb_table_function_add_named_parameter(f, "with_position", boolean);
  duckdb_table_function_add_named_parameter(f, "num_partitions", bigint);
  duckdb_table_function_add_named_parameter(f, "num_sub_vectors", bigint);
  duckdb_table_function_set_bind(f, create_index_bind);
  duckdb_table_function_set_init(f, one_row_init);
  duckdb_table_function_set_function(f, one_row_function);
  duckdb_state st = duckdb_register_table_function(con, f);
  duckdb_destroy_table_function(&f);
  duckdb_table_function d = duckdb_create_table_function();
  duckdb_table_function_set_name(d, "lance_drop_index");
  duckdb_table_function_add_parameter(d, varchar);
  duckdb_table_function_add_parameter(d, varchar);
  duckdb_table_function_set_bind(d, drop_index_bind);
  duckdb_table_function_set_init(d, one_row_init);
  duckdb_table_function_set_function(d, one_row_function);
  duckdb_state st2 = duckdb_register_table_function(con, d);
  duckdb_destroy_table_function(&d);
  duckdb_destroy_logical_type(&varchar);
  duckdb_destroy_logical_type(&bigint);
  duckdb_destroy_logical_type(&boolean);
  return st == DuckDBSuccess && st2 == DuckDBSuccess;
}

static int register_one(duckdb_connection con, const char* name, duckdb_table_function_bind_t bind, int writes) {
  duckdb_table_function f = duckdb_create_table_function();
  duckdb_table_function_set_name(f, name);
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
  duckdb_table_function_add_parameter(f, varchar); /* uri */
  duckdb_table_function_add_parameter(f, varchar); /* query / predicate */
  if (writes) {
    duckdb_table_function_add_named_parameter(f, "mode", varchar);
    duckdb_table_function_add_named_parameter(f, "commit_message", varchar);
    duckdb_table_function_add_named_parameter(f, "max_rows_per_file", bigint);
  }
  duckdb_table_function_set_bind(f, bind);
  duckdb_table_function_set_init(f, one_row_init);
  duckdb_table_function_set_function(f, one_row_function);
  duckdb_state st = duckdb_register_table_function(con, f);
  duckdb_destroy_logical_type(&varchar);
  duckdb_destroy_logical_type(&bigint);
  duckdb_destroy_table_function(&f);
  return st == DuckDBSuccess;
}

int lance_duckdb_register_writes(duckdb_connection con) {
  return register_one(con, "lance_write", write_bind, 1) && register_one(con, "lance_delete", delete_bind, 0) &&
         register_index_functions(con);
}
