/* Writes from DuckDB through lance-host (part of the lance_host extension). Table functions that
 * return one row:
 *
 *   lance_write(uri, query [, mode := 'create'|'append'|'overwrite'] [, max_rows_per_file := n]
 *               [, commit_message := 'text'])
 *       runs the SQL `query` (a string) on a connection of its own to this database and writes
 *       its result to the Lance table at `uri` as ONE new version (lance_table_write): a new
 *       table (create, the default), rows added (append), or the rows replaced (overwrite).
 *       Returns version, rows_written, files_written, bytes_written. The write happens when the
 *       statement executes, once per execution, never when it is bound (DuckDB binds again
 *       on every fetch of a Python relation); so do the other writes below.
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

/* ---- jobs: checked at bind, run once per execution ------------------------------------------
 *
 * DuckDB binds a table function again whenever a query is planned again (its Python API binds
 * `con.sql(...)` when the relation is made and again for each fetch, `show()`, `df()`), so a
 * write must never happen at bind: bind checks the arguments and keeps them, the write runs
 * when the statement executes (its function's first call after its init), once per
 * execution, and its failure is the statement's error. */

#define MAX_FIGURES 4
#define JOB_STRINGS 6

typedef struct Job Job;
/* Run the job; 1 and `values` on success, 0 and `err` on failure. */
typedef int (*JobRun)(Job* job, int64_t* values, char* err, size_t err_len);

struct Job {
  JobRun run;
  int count;               /* result columns (BIGINT) */
  char* s[JOB_STRINGS];    /* the call's strings (duckdb_free), NULL when not given */
  int64_t n[4];            /* the call's numbers */
  int flag[2];             /* the call's booleans */
  int mode;                /* lance_write's LANCE_WRITE_* */
  int index_kind;          /* lance_create_index: 0 vector, 1 scalar, 2 inverted */
  int index_code;          /* the LANCE_*_INDEX_* code */
  int metric;              /* LANCE_METRIC_*, -1 = Lance's default */
};

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

static void free_job(void* p) {
  Job* j = (Job*)p;
  for (int i = 0; i < JOB_STRINGS; i++)
    if (j->s[i]) duckdb_free(j->s[i]);
  free(j);
}

/* A job for this bind, owned by the bind data, with its BIGINT result columns declared. */
static Job* bind_job(duckdb_bind_info info, JobRun run, const char* const* names, int count) {
  Job* j = (Job*)calloc(1, sizeof(Job));
  if (!j) {
    duckdb_bind_set_error(info, "lance: out of memory");
    return NULL;
  }
  j->run = run;
  j->count = count;
  j->metric = -1;
  duckdb_bind_set_bind_data(info, j, free_job);
  duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
  for (int i = 0; i < count; i++) duckdb_bind_add_result_column(info, names[i], bigint);
  duckdb_destroy_logical_type(&bigint);
  return j;
}

static void lance_failure(char* err, size_t err_len, const char* fn) {
  snprintf(err, err_len, "%s: %s", fn, lance_last_error_message());
}

/* One execution: whether its job ran. */
typedef struct {
  int done;
} JobRunState;

static void job_init(duckdb_init_info info) {
  JobRunState* st = (JobRunState*)calloc(1, sizeof(JobRunState));
  if (!st) {
    duckdb_init_set_error(info, "lance: out of memory");
    return;
  }
  duckdb_init_set_init_data(info, st, free);
  duckdb_init_set_max_threads(info, 1);
}

static void job_function(duckdb_function_info info, duckdb_data_chunk output) {
  Job* j = (Job*)duckdb_function_get_bind_data(info);
  JobRunState* st = (JobRunState*)duckdb_function_get_init_data(info);
  if (st->done) {
    duckdb_data_chunk_set_size(output, 0);
    return;
  }
  st->done = 1;
  int64_t values[MAX_FIGURES] = {0};
  char err[4096] = {0};
  if (!j->run(j, values, err, sizeof err)) {
    duckdb_function_set_error(info, err);
    return;
  }
  for (int i = 0; i < j->count; i++)
    ((int64_t*)duckdb_vector_get_data(duckdb_data_chunk_get_vector(output, (idx_t)i)))[0] = values[i];
  duckdb_data_chunk_set_size(output, 1);
}

/* ---- lance_write ---------------------------------------------------------------------------- */

static int write_run(Job* j, int64_t* values, char* err, size_t err_len) {
  LanceWriteParams p;
  lance_write_params_init_v2(&p, sizeof p);
  p.mode = j->mode;
  p.max_rows_per_file = (uint64_t)j->n[0];
  p.commit_message = j->s[2];
  struct ArrowArrayStream data;
  char qerr[2048];
  int ok = 0;
  pthread_mutex_lock(&g_con_lock);
  if (!query_stream(j->s[1], &data, qerr, sizeof qerr)) {
    snprintf(err, err_len, "lance_write: %s", qerr);
  } else {
    LanceWriteResult r = {.struct_size = sizeof r};
    if (lance_table_write(j->s[0], NULL, &data, &p, NULL, &r) != LANCE_OK) {
      lance_failure(err, err_len, "lance_write");
    } else {
      values[0] = (int64_t)r.version;
      values[1] = (int64_t)r.rows_written;
      values[2] = (int64_t)r.files_written;
      values[3] = (int64_t)r.bytes_written;
      ok = 1;
    }
  }
  pthread_mutex_unlock(&g_con_lock); /* lance_table_write released the stream (and the result) */
  return ok;
}

static void write_bind(duckdb_bind_info info) {
  static const char* const names[] = {"version", "rows_written", "files_written", "bytes_written"};
  Job* j = bind_job(info, write_run, names, 4);
  if (!j) return;
  j->s[0] = string_param(info, 0);
  j->s[1] = string_param(info, 1);
  char* mode = named_string(info, "mode");
  j->s[2] = named_string(info, "commit_message");
  if (!mode || strcmp(mode, "create") == 0) {
    j->mode = LANCE_WRITE_CREATE;
  } else if (strcmp(mode, "append") == 0) {
    j->mode = LANCE_WRITE_APPEND;
  } else if (strcmp(mode, "overwrite") == 0) {
    j->mode = LANCE_WRITE_OVERWRITE;
  } else {
    duckdb_bind_set_error(info, "lance_write: mode must be 'create', 'append' or 'overwrite'");
  }
  if (mode) duckdb_free(mode);
  j->n[0] = named_int(info, "max_rows_per_file", 0);
  duckdb_value rows = duckdb_bind_get_named_parameter(info, "max_rows_per_file");
  if (rows) {
    if (j->n[0] <= 0) duckdb_bind_set_error(info, "lance_write: max_rows_per_file must be at least 1");
    duckdb_destroy_value(&rows);
  }
}

/* ---- lance_delete --------------------------------------------------------------------------- */

static int delete_run(Job* j, int64_t* values, char* err, size_t err_len) {
  LanceDataset* ds = lance_dataset_open(j->s[0], NULL, 0);
  if (!ds) {
    lance_failure(err, err_len, "lance_delete");
    return 0;
  }
  LanceWriteResult r = {.struct_size = sizeof r};
  int ok = lance_dataset_delete(ds, j->s[1], NULL, NULL, &r) == LANCE_OK;
  if (!ok) {
    lance_failure(err, err_len, "lance_delete");
  } else {
    values[0] = (int64_t)r.version;
    values[1] = (int64_t)r.rows_deleted;
  }
  lance_dataset_free(ds);
  return ok;
}

static void delete_bind(duckdb_bind_info info) {
  static const char* const names[] = {"version", "rows_deleted"};
  Job* j = bind_job(info, delete_run, names, 2);
  if (!j) return;
  j->s[0] = string_param(info, 0);
  j->s[1] = string_param(info, 1);
}

/* ---- lance_create_index / lance_drop_index ------------------------------------------------- */

static const char* const VECTOR_TYPES[] = {"IVF_PQ", "IVF_FLAT", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ", "IVF_HNSW_SQ"};
static const int VECTOR_CODES[] = {LANCE_VECTOR_INDEX_IVF_PQ, LANCE_VECTOR_INDEX_IVF_FLAT,
                                   LANCE_VECTOR_INDEX_IVF_SQ, LANCE_VECTOR_INDEX_IVF_HNSW_FLAT,
                                   LANCE_VECTOR_INDEX_IVF_HNSW_PQ, LANCE_VECTOR_INDEX_IVF_HNSW_SQ};
static const char* const SCALAR_TYPES[] = {"BTREE", "BITMAP", "LABEL_LIST"};
static const int SCALAR_CODES[] = {LANCE_SCALAR_INDEX_BTREE, LANCE_SCALAR_INDEX_BITMAP, LANCE_SCALAR_INDEX_LABEL_LIST};

/* strings: 0 uri, 1 column, 2 index type, 3 name; numbers: 0 partitions, 1 sub-vectors;
 * flags: 0 replace, 1 with_position */
static int create_index_run(Job* j, int64_t* values, char* err, size_t err_len) {
  LanceDataset* ds = lance_dataset_open(j->s[0], NULL, 0);
  if (!ds) {
    lance_failure(err, err_len, "lance_create_index");
    return 0;
  }
  LanceDataset* out = NULL;
  int rc;
  if (j->index_kind == 0) {
    LanceVectorIndexParams p;
    lance_vector_index_params_init_v2(&p, sizeof p);
    p.index_type = j->index_code;
    p.num_partitions = (uint32_t)j->n[0];
    p.num_sub_vectors = (uint32_t)j->n[1];
    if (j->metric >= 0) p.metric = j->metric;
    rc = lance_dataset_create_vector_index(ds, j->s[1], j->s[3], j->flag[0], &p, &out);
  } else if (j->index_kind == 1) {
    LanceScalarIndexParams p;
    lance_scalar_index_params_init_v2(&p, sizeof p);
    p.index_type = j->index_code;
    rc = lance_dataset_create_scalar_index(ds, j->s[1], j->s[3], j->flag[0], &p, &out);
  } else {
    LanceInvertedIndexParams p;
    lance_inverted_index_params_init_v2(&p, sizeof p);
    p.with_position = j->flag[1] ? 1 : 0;
    rc = lance_dataset_create_inverted_index(ds, j->s[1], j->s[3], j->flag[0], &p, &out);
  }
  int ok = rc == LANCE_OK;
  if (!ok) {
    lance_failure(err, err_len, "lance_create_index");
  } else {
    values[0] = (int64_t)lance_dataset_version(out);
  }
  if (out) lance_dataset_free(out);
  lance_dataset_free(ds);
  return ok;
}

static void create_index_bind(duckdb_bind_info info) {
  static const char* const names[] = {"version"};
  Job* j = bind_job(info, create_index_run, names, 1);
  if (!j) return;
  j->s[0] = string_param(info, 0);
  j->s[1] = string_param(info, 1);
  j->s[2] = string_param(info, 2);
  j->s[3] = named_string(info, "name");
  char* metric = named_string(info, "metric");
  j->flag[0] = named_bool(info, "replace", 0);
  j->flag[1] = named_bool(info, "with_position", 0);
  j->n[0] = named_int(info, "num_partitions", 0);
  j->n[1] = named_int(info, "num_sub_vectors", 0);
  const char* type = j->s[2] ? j->s[2] : "";
  j->index_kind = -1;
  for (int i = 0; i < 6; i++)
    if (strcasecmp(type, VECTOR_TYPES[i]) == 0) j->index_kind = 0, j->index_code = VECTOR_CODES[i];
  for (int i = 0; i < 3; i++)
    if (strcasecmp(type, SCALAR_TYPES[i]) == 0) j->index_kind = 1, j->index_code = SCALAR_CODES[i];
  if (strcasecmp(type, "INVERTED") == 0) j->index_kind = 2;
  if (j->n[0] < 0 || j->n[0] > 0xffffffffLL || j->n[1] < 0 || j->n[1] > 0xffffffffLL) {
    duckdb_bind_set_error(info, "lance_create_index: num_partitions and num_sub_vectors must be between 0 and 2^32-1");
  } else if (j->index_kind < 0) {
    duckdb_bind_set_error(info,
                          "lance_create_index: index_type must be one of IVF_PQ, IVF_FLAT, IVF_SQ, IVF_HNSW_FLAT, "
                          "IVF_HNSW_PQ, IVF_HNSW_SQ, BTREE, BITMAP, LABEL_LIST, INVERTED");
  } else if (metric && j->index_kind == 0) {
    if (strcasecmp(metric, "l2") == 0) j->metric = LANCE_METRIC_L2;
    else if (strcasecmp(metric, "cosine") == 0) j->metric = LANCE_METRIC_COSINE;
    else if (strcasecmp(metric, "dot") == 0) j->metric = LANCE_METRIC_DOT;
    else duckdb_bind_set_error(info, "lance_create_index: metric must be 'l2', 'cosine' or 'dot'");
  }
  if (metric) duckdb_free(metric);
}

static int drop_index_run(Job* j, int64_t* values, char* err, size_t err_len) {
  LanceDataset* ds = lance_dataset_open(j->s[0], NULL, 0);
  LanceDataset* out = NULL;
  int ok = ds && lance_dataset_drop_index(ds, j->s[1], &out) == LANCE_OK;
  if (!ok) {
    lance_failure(err, err_len, "lance_drop_index");
  } else {
    values[0] = (int64_t)lance_dataset_version(out);
  }
  if (out) lance_dataset_free(out);
  if (ds) lance_dataset_free(ds);
  return ok;
}

static void drop_index_bind(duckdb_bind_info info) {
  static const char* const names[] = {"version"};
  Job* j = bind_job(info, drop_index_run, names, 1);
  if (!j) return;
  j->s[0] = string_param(info, 0);
  j->s[1] = string_param(info, 1);
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
  duckdb_table_function_set_init(f, job_init);
  duckdb_table_function_set_function(f, job_function);
  duckdb_state st = duckdb_register_table_function(con, f);
  duckdb_destroy_table_function(&f);
  duckdb_table_function d = duckdb_create_table_function();
  duckdb_table_function_set_name(d, "lance_drop_index");
  duckdb_table_function_add_parameter(d, varchar);
  duckdb_table_function_add_parameter(d, varchar);
  duckdb_table_function_set_bind(d, drop_index_bind);
  duckdb_table_function_set_init(d, job_init);
  duckdb_table_function_set_function(d, job_function);
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
  duckdb_table_function_set_init(f, job_init);
  duckdb_table_function_set_function(f, job_function);
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
