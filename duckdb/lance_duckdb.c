/* lance-host as a DuckDB extension, written against DuckDB's C extension API (stable API v1.5.6,
 * so any DuckDB from 1.5.6 on loads it). Table functions:
 *
 *   lance_scan(uri [, filter := 'sql'] [, version := n] [, branch := 'name'])
 *       the table at `version` (default: latest, pinned at bind) of `branch` (default: main;
 *       every search function takes `branch` too), read in parallel: lance-host
 *       plans one scan split per fragment and DuckDB's threads take splits in turn. DuckDB
 *       pushes its projection down (only the columns the query uses are read); `filter` is
 *       pushed into Lance's scan (scalar indexes apply). DuckDB's C API has no filter pushdown
 *       of its own, so a WHERE clause is evaluated by DuckDB on the rows the scan returns.
 *       `key_column := 'id', keys := [...]` is a runtime key set (a join's build-side keys):
 *       only rows whose column holds one of the keys are read (a scalar index answers it);
 *       the keys travel as text and are cast exactly to the column's type.
 *   lance_vector_search(uri, column, vector, k [, filter := 'sql'] [, nprobes := n] [, refine := n]
 *                       [, distance_lower := x] [, distance_upper := y])
 *       the k rows nearest to `vector` (a list of numbers): every split of lance-host's vector
 *       plan (index segments and unindexed fragments) is searched and the top-k merged, with
 *       `_distance`; `filter` is a prefilter. Projection is pushed down as for lance_scan.
 *
 *   lance_vector_search_batch(uri, column, vectors, k [, filter := 'sql'] [, nprobes := n] [, refine := n]
 *                             [, distance_lower := x] [, distance_upper := y])
 *       the k nearest rows for each query vector of `vectors` (a list of lists of numbers, all of
 *       one dimension), with `query_index` (0-based position in `vectors`) and `_distance`: every
 *       split of the vector plan is searched once for the whole batch and the results merged per
 *       query. Ordered by query_index, then distance.
 *   lance_blob_read(uri, column, row_id, offset, length)  -- scalar
 *       `length` bytes of row `row_id`'s blob in blob column `column` from `offset`, as a BLOB,
 *       read by range (only those bytes are fetched); NULL for a null blob. A range past the end
 *       of the blob is an error. A query opens each table once per DuckDB thread that runs the
 *       function and reads that version for the rest of the query; rows of one chunk with the
 *       same uri and column share one descriptor take.
 *
 *   lance_fts(uri, column, query, k [, filter := 'sql'] [, operator := 'OR'|'AND'|'PHRASE']
 *             [, slop := n] [, version := n])
 *       the k rows of the table's full-text search with BM25 `_score` (descending): lance-host's
 *       full-text plan (one split per INVERTED segment plus unindexed fragments), the corpus
 *       statistics computed once, every split searched with them and merged — the answer Lance's
 *       own search gives. `filter` is a prefilter.
 *   lance_hybrid_search(uri, vector_column, vector, text_column, query, k [, filter := 'sql']
 *                       [, nprobes := n] [, rrf_k := 60] [, version := n])
 *       the k best rows of a vector search and a full-text search fused by reciprocal rank, with
 *       `_relevance_score`, `_distance` and `_score` (NULL where a row is absent from a list).
 *
 *   lance_changes(uri, since_version, version [, branch := 'name'])
 *       the rows changed after `since_version` up to `version` (0 = latest): the table's
 *       columns, then `_rowid`, `_row_created_at_version`, `_row_last_updated_at_version` and
 *       `_change_type` ('insert', 'update', 'delete'; deleted rows with their values at
 *       `since_version`), read in parallel from lance-host's change splits. Needs a table with
 *       stable row ids (an error names the table otherwise).
 *
 *   lance_host_data_cache([memory_bytes := n] [, block_bytes := n] [, disk_dir := 'path']
 *                         [, disk_bytes := n] [, disabled := true])
 *       one row with the data cache's settings in effect and its figures (hits, misses, bytes
 *       from cache and from storage, evictions, errors, bytes per tier). With any named
 *       parameter it first configures lance-host's process-wide session, which works only
 *       before the first lance_scan/lance_vector_search of the process (0 = the default).
 *
 * Writes (lance_write, lance_delete) are in lance_duckdb_write.c.
 *
 * Rows arrive as Arrow C Data batches from lance-host and are copied into DuckDB vectors.
 * Supported column types: (u)int8..64, float, double, bool, utf8/large utf8 and fixed-size
 * lists of float or double (DuckDB FLOAT[n] / DOUBLE[n]); a query that uses a column of
 * another type fails with an error naming it. */
#define DUCKDB_EXTENSION_NAME lance_host
#define DUCKDB_EXTENSION_API_VERSION_MAJOR 1
#define DUCKDB_EXTENSION_API_VERSION_MINOR 5
#define DUCKDB_EXTENSION_API_VERSION_PATCH 6
#include "duckdb_extension.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "lance_host.h"

DUCKDB_EXTENSION_EXTERN

/* Columns of one table function's result (a table's columns and the few the function adds, or
 * lance_aggregate's 64 group-by columns and 1,024 aggregates). A wider result is refused at
 * bind, never cut short. */
#define MAX_COLUMNS 2048

/* One output column: its name and Arrow format in the table schema. */
typedef struct {
  char* name;
  char* format;
  size_t list_size; /* for FLOAT[n] */
  int supported;
} Column;

typedef struct {
  LanceDataset* ds;
  Column cols[MAX_COLUMNS];
  size_t ncols;
  char* filter;
  /* lance_scan's runtime key set: `key_column := 'id', keys := [...]`, as strings (NULL entry:
     a NULL key); the library casts them exactly to the column's type */
  char* key_column;
  char** keys;
  size_t nkeys;
  char* branch;           /* `branch :=` (NULL: the default branch) */
  uint64_t since_version; /* lance_changes: the changes after this version */
  /* 0 lance_scan, 1 lance_vector_search, 2 lance_fts, 3 lance_hybrid_search */
  int is_search;
  char* vector_column;
  float* vector;
  size_t dim;
  uint64_t k;
  uint32_t nprobes;
  uint32_t refine_factor;
  float distance_lower, distance_upper;
  uint32_t distance_bounds;
  size_t num_queries; /* lance_vector_search_batch: `vector` holds num_queries * dim values */
  /* full-text search */
  char* text_column;
  char* text;
  int match_kind;
  uint32_t slop;
  double rrf_k;
  /* lance_aggregate: the spec's strings and the result computed at bind (taken by the first
     init; a later init of the same bind computes it again) */
  char* agg_group[64];
  size_t agg_ngroup;
  char* agg_column[1024];
  int32_t agg_function[1024];
  size_t agg_n;
  struct ArrowArrayStream agg_pending;
} BindData;

#define KIND_VECTOR 1
#define KIND_FTS 2
#define KIND_HYBRID 3
#define KIND_BATCH 4
#define KIND_AGGREGATE 5
#define KIND_CHANGES 6

/* A stream being turned into DuckDB chunks. */
typedef struct {
  struct ArrowArrayStream stream;
  struct ArrowSchema schema;
  struct ArrowArray batch; /* current batch (release == NULL: none) */
  int64_t row;              /* next row of `batch` */
  int src[MAX_COLUMNS];     /* child index in the stream of each projected column */
  int active;
} Reader;

/* Per query: the projection and, for lance_scan, the scan splits the threads share; for
   lance_vector_search the one merged stream. */
typedef struct {
  const Column* out_cols[MAX_COLUMNS]; /* projected output columns */
  size_t nout;
  const char* names[MAX_COLUMNS]; /* the projected table columns, for lance-host */
  size_t nnames;
  LanceSplitPlan* plan; /* lance_scan: one split per fragment, handed out in order */
  size_t nsplits;
  atomic_size_t next_split;
  Reader single; /* lance_vector_search, lance_fts, lance_hybrid_search */
  /* lance_hybrid_search: the fused scores of the rows `single` reads, in its order */
  float* fused[3]; /* _relevance_score, _distance, _score */
  uint8_t* fused_null[3];
  size_t fused_n;
  size_t emitted;
} GlobalState;

/* Per DuckDB thread of a lance_scan: the split it is reading. */
typedef struct {
  Reader reader;
} LocalState;

static int is_valid(const struct ArrowArray* a, int64_t i);

static char* dup_str(const char* s) {
  size_t n = strlen(s) + 1;
  char* d = (char*)malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static void free_bind(void* p) {
  BindData* b = (BindData*)p;
  if (!b) return;
  for (size_t i = 0; i < b->ncols; i++) {
    free(b->cols[i].name);
    free(b->cols[i].format);
  }
  free(b->filter);
  free(b->key_column);
  for (size_t i = 0; i < b->nkeys; i++) free(b->keys[i]);
  free(b->keys);
  free(b->branch);
  free(b->vector_column);
  free(b->vector);
  free(b->text_column);
  free(b->text);
  for (size_t i = 0; i < b->agg_ngroup; i++) free(b->agg_group[i]);
  for (size_t i = 0; i < b->agg_n; i++) free(b->agg_column[i]);
  if (b->agg_pending.release) b->agg_pending.release(&b->agg_pending);
  lance_dataset_free(b->ds);
  free(b);
}

static void reader_close(Reader* r) {
  if (r->batch.release) r->batch.release(&r->batch);
  if (r->schema.release) r->schema.release(&r->schema);
  if (r->stream.release) r->stream.release(&r->stream);
  memset(r, 0, sizeof *r);
}

static void free_global(void* p) {
  GlobalState* g = (GlobalState*)p;
  if (!g) return;
  reader_close(&g->single);
  lance_split_plan_free(g->plan);
  for (int i = 0; i < 3; i++) {
    free(g->fused[i]);
    free(g->fused_null[i]);
  }
  free(g);
}

static void free_local(void* p) {
  LocalState* l = (LocalState*)p;
  if (!l) return;
  reader_close(&l->reader);
  free(l);
}

/* The DuckDB type of an Arrow format, or NULL when unsupported. */
static duckdb_logical_type duck_type(const struct ArrowSchema* f, size_t* list_size) {
  const char* fmt = f->format;
  duckdb_type t = DUCKDB_TYPE_INVALID;
  if (strcmp(fmt, "c") == 0) t = DUCKDB_TYPE_TINYINT;
  else if (strcmp(fmt, "s") == 0) t = DUCKDB_TYPE_SMALLINT;
  else if (strcmp(fmt, "i") == 0) t = DUCKDB_TYPE_INTEGER;
  else if (strcmp(fmt, "l") == 0) t = DUCKDB_TYPE_BIGINT;
  else if (strcmp(fmt, "C") == 0) t = DUCKDB_TYPE_UTINYINT;
  else if (strcmp(fmt, "S") == 0) t = DUCKDB_TYPE_USMALLINT;
  else if (strcmp(fmt, "I") == 0) t = DUCKDB_TYPE_UINTEGER;
  else if (strcmp(fmt, "L") == 0) t = DUCKDB_TYPE_UBIGINT;
  else if (strcmp(fmt, "f") == 0) t = DUCKDB_TYPE_FLOAT;
  else if (strcmp(fmt, "g") == 0) t = DUCKDB_TYPE_DOUBLE;
  else if (strcmp(fmt, "b") == 0) t = DUCKDB_TYPE_BOOLEAN;
  else if (strcmp(fmt, "u") == 0 || strcmp(fmt, "U") == 0) t = DUCKDB_TYPE_VARCHAR;
  else if (strcmp(fmt, "tdD") == 0) t = DUCKDB_TYPE_DATE;       /* int32 days: DuckDB's DATE */
  else if (strcmp(fmt, "tsu:") == 0) t = DUCKDB_TYPE_TIMESTAMP; /* int64 microseconds, no zone */
  else if (strncmp(fmt, "d:", 2) == 0) {
    int p = 0, sc = 0, bits = 128;
    /* decimal128 "d:p,s" (or "d:p,s,128"); negative scales are not DuckDB's */
    if (sscanf(fmt + 2, "%d,%d,%d", &p, &sc, &bits) >= 2 && bits == 128 && p >= 1 && p <= 38 && sc >= 0 && sc <= p)
      return duckdb_create_decimal_type((uint8_t)p, (uint8_t)sc);
  } else if (strncmp(fmt, "+w:", 3) == 0 && f->n_children == 1 &&
           (strcmp(f->children[0]->format, "f") == 0 || strcmp(f->children[0]->format, "g") == 0)) {
    *list_size = (size_t)strtoull(fmt + 3, NULL, 10);
    duckdb_logical_type child =
        duckdb_create_logical_type(f->children[0]->format[0] == 'f' ? DUCKDB_TYPE_FLOAT : DUCKDB_TYPE_DOUBLE);
    duckdb_logical_type arr = duckdb_create_array_type(child, *list_size);
    duckdb_destroy_logical_type(&child);
    return arr;
  }
  if (t == DUCKDB_TYPE_INVALID) return NULL;
  return duckdb_create_logical_type(t);
}

/* Declare the columns of the dataset's schema (and `_distance` for searches). */
static int bind_columns(duckdb_bind_info info, BindData* b) {
  struct ArrowSchema schema;
  if (lance_dataset_schema(b->ds, &schema) != LANCE_OK) {
    duckdb_bind_set_error(info, lance_last_error_message());
    return 0;
  }
  if (b->is_search == KIND_BATCH) {
    Column* c = &b->cols[b->ncols++];
    c->name = dup_str("query_index");
    c->format = dup_str("i");
    c->supported = 1;
    duckdb_logical_type t = duckdb_create_logical_type(DUCKDB_TYPE_INTEGER);
    duckdb_bind_add_result_column(info, "query_index", t);
    duckdb_destroy_logical_type(&t);
  }
  if (schema.n_children > MAX_COLUMNS - 8) {
    char msg[256];
    snprintf(msg, sizeof msg, "lance: the table has %lld columns; this extension reads tables of at most %d",
             (long long)schema.n_children, MAX_COLUMNS - 8);
    schema.release(&schema);
    duckdb_bind_set_error(info, msg);
    return 0;
  }
  for (int64_t i = 0; i < schema.n_children; i++) {
    const struct ArrowSchema* f = schema.children[i];
    /* DuckDB hands a BLOB list parameter over as its escaped text (x'AA' as the characters
     * \xAA): a key set on a binary column would compare that text, so it is refused. */
    if (b->key_column && strcmp(f->name, b->key_column) == 0 &&
        (strcmp(f->format, "z") == 0 || strcmp(f->format, "Z") == 0 || strcmp(f->format, "vz") == 0)) {
      char msg[512];
      snprintf(msg, sizeof msg,
               "lance_scan: key_column '%s' is a binary column; DuckDB passes BLOB keys as their escaped text, "
               "which would match the wrong values: filter it in DuckDB (WHERE %s IN (...))",
               f->name, f->name);
      schema.release(&schema);
      duckdb_bind_set_error(info, msg);
      return 0;
    }
    Column* c = &b->cols[b->ncols++];
    c->name = dup_str(f->name);
    c->format = dup_str(f->format);
    duckdb_logical_type t = duck_type(f, &c->list_size);
    c->supported = t != NULL;
    /* Columns DuckDB cannot receive stay visible (as VARCHAR) and fail only when used. */
    if (!t) t = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
    duckdb_bind_add_result_column(info, f->name, t);
    duckdb_destroy_logical_type(&t);
  }
  schema.release(&schema);
  const char* extra[3] = {NULL, NULL, NULL};
  if (b->is_search == KIND_VECTOR || b->is_search == KIND_BATCH) extra[0] = "_distance";
  if (b->is_search == KIND_FTS) extra[0] = "_score";
  if (b->is_search == KIND_HYBRID) {
    extra[0] = "_relevance_score";
    extra[1] = "_distance";
    extra[2] = "_score";
  }
  for (int i = 0; i < 3 && extra[i]; i++) {
    Column* c = &b->cols[b->ncols++];
    c->name = dup_str(extra[i]);
    c->format = dup_str("f");
    c->supported = 1;
    duckdb_logical_type t = duckdb_create_logical_type(DUCKDB_TYPE_FLOAT);
    duckdb_bind_add_result_column(info, extra[i], t);
    duckdb_destroy_logical_type(&t);
  }
  return 1;
}

/* A column the searches compute (not a table column). */
static int is_computed(const char* name) {
  return strcmp(name, "_distance") == 0 || strcmp(name, "_score") == 0 || strcmp(name, "_relevance_score") == 0 ||
         strcmp(name, "query_index") == 0;
}

static char* varchar_param(duckdb_value v) {
  char* s = duckdb_get_varchar(v);
  char* out = dup_str(s);
  duckdb_free(s);
  return out;
}

/* Positional parameter `i` of a table function as a malloc'd string (caller frees). */
static char* varchar_arg(duckdb_bind_info info, idx_t i) {
  duckdb_value v = duckdb_bind_get_parameter(info, i);
  char* out = varchar_param(v);
  duckdb_destroy_value(&v);
  return out;
}

/* Named parameters shared by both functions; returns 0 after setting an error. */
static int bind_named(duckdb_bind_info info, BindData* b, uint64_t* version) {
  duckdb_value v = duckdb_bind_get_named_parameter(info, "filter");
  if (v) {
    b->filter = varchar_param(v);
    duckdb_destroy_value(&v);
  }
  v = duckdb_bind_get_named_parameter(info, "version");
  if (v) {
    int64_t n = duckdb_get_int64(v);
    duckdb_destroy_value(&v);
    if (n < 0) {
      duckdb_bind_set_error(info, "lance: version must not be negative");
      return 0;
    }
    *version = (uint64_t)n;
  }
  v = duckdb_bind_get_named_parameter(info, "branch");
  if (v) {
    b->branch = varchar_param(v);
    duckdb_destroy_value(&v);
  }
  v = duckdb_bind_get_named_parameter(info, "nprobes");
  if (v) {
    b->nprobes = (uint32_t)duckdb_get_int64(v);
    duckdb_destroy_value(&v);
  }
  v = duckdb_bind_get_named_parameter(info, "refine");
  if (v) {
    int64_t n = duckdb_get_int64(v);
    duckdb_destroy_value(&v);
    if (n < 0 || n > 1000) {
      duckdb_bind_set_error(info, "lance_vector_search: refine must be between 0 and 1000");
      return 0;
    }
    b->refine_factor = (uint32_t)n;
  }
  v = duckdb_bind_get_named_parameter(info, "distance_lower");
  if (v) {
    b->distance_lower = (float)duckdb_get_double(v);
    b->distance_bounds |= 1;
    duckdb_destroy_value(&v);
  }
  v = duckdb_bind_get_named_parameter(info, "distance_upper");
  if (v) {
    b->distance_upper = (float)duckdb_get_double(v);
    b->distance_bounds |= 2;
    duckdb_destroy_value(&v);
  }
  v = duckdb_bind_get_named_parameter(info, "operator");
  if (v) {
    char* op = varchar_param(v);
    duckdb_destroy_value(&v);
    int kind = -1;
    if (strcmp(op, "OR") == 0 || strcmp(op, "or") == 0) kind = LANCE_TEXT_MATCH_ANY;
    if (strcmp(op, "AND") == 0 || strcmp(op, "and") == 0) kind = LANCE_TEXT_MATCH_ALL;
    if (strcmp(op, "PHRASE") == 0 || strcmp(op, "phrase") == 0) kind = LANCE_TEXT_MATCH_PHRASE;
    free(op);
    if (kind < 0) {
      duckdb_bind_set_error(info, "lance_fts: operator must be 'OR', 'AND' or 'PHRASE'");
      return 0;
    }
    b->match_kind = kind;
  }
  v = duckdb_bind_get_named_parameter(info, "slop");
  if (v) {
    int64_t n = duckdb_get_int64(v);
    duckdb_destroy_value(&v);
    if (n < 0 || n > UINT32_MAX) {
      duckdb_bind_set_error(info, "lance_fts: slop must be between 0 and 4294967295");
      return 0;
    }
    b->slop = (uint32_t)n;
  }
  b->rrf_k = 60.0;
  v = duckdb_bind_get_named_parameter(info, "rrf_k");
  if (v) {
    b->rrf_k = duckdb_get_double(v);
    duckdb_destroy_value(&v);
  }
  return 1;
}

static void bind_open(duckdb_bind_info info, BindData* b, const char* uri, uint64_t version) {
  b->ds = b->branch ? lance_dataset_open_branch(uri, NULL, b->branch, version) : lance_dataset_open(uri, NULL, version);
  if (!b->ds) {
    char msg[4096];
    snprintf(msg, sizeof msg, "lance: cannot open %s: %s", uri, lance_last_error_message());
    duckdb_bind_set_error(info, msg);
  }
}

/* lance_scan's `key_column` and `keys`: both or neither; 0 after setting an error. */
static int bind_keys(duckdb_bind_info info, BindData* b) {
  duckdb_value column = duckdb_bind_get_named_parameter(info, "key_column");
  duckdb_value keys = duckdb_bind_get_named_parameter(info, "keys");
  int ok = 1;
  if ((column == NULL) != (keys == NULL) || (column && duckdb_is_null_value(column)) || (keys && duckdb_is_null_value(keys))) {
    duckdb_bind_set_error(info, "lance_scan: give key_column and keys together (the column and the list of its values to keep)");
    ok = 0;
  } else if (column) {
    b->key_column = varchar_param(column);
    b->nkeys = (size_t)duckdb_get_list_size(keys);
    b->keys = (char**)calloc(b->nkeys ? b->nkeys : 1, sizeof(char*));
    for (size_t i = 0; b->keys && i < b->nkeys; i++) {
      duckdb_value e = duckdb_get_list_child(keys, i);
      if (!duckdb_is_null_value(e)) b->keys[i] = varchar_param(e);
      duckdb_destroy_value(&e);
    }
    if (!b->keys || !b->key_column) {
      duckdb_bind_set_error(info, "lance_scan: out of memory for the key set");
      ok = 0;
    }
  }
  if (column) duckdb_destroy_value(&column);
  if (keys) duckdb_destroy_value(&keys);
  return ok;
}

static void scan_bind(duckdb_bind_info info) {
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

static void search_bind(duckdb_bind_info info) {
  BindData* b = (BindData*)calloc(1, sizeof(BindData));
  b->is_search = KIND_VECTOR;
  duckdb_bind_set_bind_data(info, b, free_bind);
  char* uri = varchar_arg(info, 0);
  b->vector_column = varchar_arg(info, 1);
  duckdb_value v = duckdb_bind_get_parameter(info, 2);
  b->dim = (size_t)duckdb_get_list_size(v);
  b->vector = (float*)calloc(b->dim ? b->dim : 1, sizeof(float));
  for (size_t i = 0; i < b->dim; i++) {
    duckdb_value e = duckdb_get_list_child(v, i);
    b->vector[i] = (float)duckdb_get_double(e);
    duckdb_destroy_value(&e);
  }
  duckdb_destroy_value(&v);
  v = duckdb_bind_get_parameter(info, 3);
  int64_t k = duckdb_get_int64(v);
  duckdb_destroy_value(&v);
  uint64_t version = 0;
  if (k < 1) {
    duckdb_bind_set_error(info, "lance_vector_search: k must be at least 1");
  } else if (b->dim == 0) {
    duckdb_bind_set_error(info, "lance_vector_search: the query vector is empty");
  } else if (bind_named(info, b, &version)) {
    b->k = (uint64_t)k;
    bind_open(info, b, uri, version);
    if (b->ds) bind_columns(info, b);
  }
  free(uri);
}

/* lance_vector_search_batch(uri, column, vectors, k): the vectors flattened into b->vector. */
static void batch_bind(duckdb_bind_info info) {
  BindData* b = (BindData*)calloc(1, sizeof(BindData));
  b->is_search = KIND_BATCH;
  duckdb_bind_set_bind_data(info, b, free_bind);
  char* uri = varchar_arg(info, 0);
  b->vector_column = varchar_arg(info, 1);
  duckdb_value v = duckdb_bind_get_parameter(info, 2);
  size_t n = (size_t)duckdb_get_list_size(v);
  char err[256] = "";
  for (size_t q = 0; q < n && !err[0]; q++) {
    duckdb_value vec = duckdb_get_list_child(v, q);
    size_t dim = (size_t)duckdb_get_list_size(vec);
    if (q == 0) {
      b->dim = dim;
      b->vector = (float*)calloc(n * (dim ? dim : 1), sizeof(float));
    }
    if (dim == 0) {
      snprintf(err, sizeof err, "lance_vector_search_batch: query vector %zu is empty", q);
    } else if (dim != b->dim) {
      snprintf(err, sizeof err, "lance_vector_search_batch: query vector %zu has %zu values, vector 0 has %zu", q, dim,
               b->dim);
    } else {
      for (size_t i = 0; i < dim; i++) {
        duckdb_value e = duckdb_get_list_child(vec, i);
        b->vector[q * dim + i] = (float)duckdb_get_double(e);
        duckdb_destroy_value(&e);
      }
    }
    duckdb_destroy_value(&vec);
  }
  duckdb_destroy_value(&v);
  b->num_queries = n;
  v = duckdb_bind_get_parameter(info, 3);
  int64_t k = duckdb_get_int64(v);
  duckdb_destroy_value(&v);
  uint64_t version = 0;
  if (n == 0) {
    duckdb_bind_set_error(info, "lance_vector_search_batch: the batch holds no query vector");
  } else if (err[0]) {
    duckdb_bind_set_error(info, err);
  } else if (k < 1) {
    duckdb_bind_set_error(info, "lance_vector_search_batch: k must be at least 1");
  } else if (bind_named(info, b, &version)) {
    b->k = (uint64_t)k;
    bind_open(info, b, uri, version);
    if (b->ds) bind_columns(info, b);
  }
  free(uri);
}

/* lance_fts(uri, column, query, k) and lance_hybrid_search(uri, vector_column, vector,
   text_column, query, k). */
static void text_bind(duckdb_bind_info info, int kind) {
  BindData* b = (BindData*)calloc(1, sizeof(BindData));
  b->is_search = kind;
  duckdb_bind_set_bind_data(info, b, free_bind);
  const char* fn = kind == KIND_FTS ? "lance_fts" : "lance_hybrid_search";
  idx_t at = 0;
  duckdb_value v = duckdb_bind_get_parameter(info, at++);
  char* uri = varchar_param(v);
  duckdb_destroy_value(&v);
  if (kind == KIND_HYBRID) {
    v = duckdb_bind_get_parameter(info, at++);
    b->vector_column = varchar_param(v);
    duckdb_destroy_value(&v);
    v = duckdb_bind_get_parameter(info, at++);
    b->dim = (size_t)duckdb_get_list_size(v);
    b->vector = (float*)calloc(b->dim ? b->dim : 1, sizeof(float));
    for (size_t i = 0; i < b->dim; i++) {
      duckdb_value e = duckdb_get_list_child(v, i);
      b->vector[i] = (float)duckdb_get_double(e);
      duckdb_destroy_value(&e);
    }
    duckdb_destroy_value(&v);
  }
  v = duckdb_bind_get_parameter(info, at++);
  b->text_column = varchar_param(v);
  duckdb_destroy_value(&v);
  v = duckdb_bind_get_parameter(info, at++);
  b->text = varchar_param(v);
  duckdb_destroy_value(&v);
  v = duckdb_bind_get_parameter(info, at++);
  int64_t k = duckdb_get_int64(v);
  duckdb_destroy_value(&v);
  uint64_t version = 0;
  char msg[256];
  if (k < 1) {
    snprintf(msg, sizeof msg, "%s: k must be at least 1", fn);
    duckdb_bind_set_error(info, msg);
  } else if (kind == KIND_HYBRID && b->dim == 0) {
    snprintf(msg, sizeof msg, "%s: the query vector is empty", fn);
    duckdb_bind_set_error(info, msg);
  } else if (bind_named(info, b, &version)) {
    b->k = (uint64_t)k;
    bind_open(info, b, uri, version);
    if (b->ds) bind_columns(info, b);
  }
  free(uri);
}

static void fts_bind(duckdb_bind_info info) { text_bind(info, KIND_FTS); }
static void hybrid_bind(duckdb_bind_info info) { text_bind(info, KIND_HYBRID); }

/* Start reading `r->stream`: map the projected columns to its children by name. Returns NULL or
   an error message (static or the stream's). */
static const char* reader_start(Reader* r, const GlobalState* g) {
  r->active = 1;
  if (r->stream.get_schema(&r->stream, &r->schema) != 0) return r->stream.get_last_error(&r->stream);
  for (size_t i = 0; i < g->nout; i++) {
    r->src[i] = -1;
    if (g->fused[0] && is_computed(g->out_cols[i]->name)) {
      r->src[i] = -2; /* filled from the fused scores */
      continue;
    }
    for (int64_t c = 0; c < r->schema.n_children; c++)
      if (strcmp(r->schema.children[c]->name, g->out_cols[i]->name) == 0) r->src[i] = (int)c;
    /* A batch of one query is a single search: no query_index column, every row is query 0. */
    if (r->src[i] < 0 && strcmp(g->out_cols[i]->name, "query_index") == 0) r->src[i] = -3;
    if (r->src[i] < 0 && r->src[i] != -3) return "lance: a projected column is missing from the stream";
  }
  return NULL;
}

/* The columns every change split returns after the table's (lance_dataset_plan_changes). */
static const char* const change_meta[4] = {"_rowid", "_row_created_at_version", "_row_last_updated_at_version",
                                           "_change_type"};

static int is_change_meta(const char* name) {
  for (int i = 0; i < 4; i++)
    if (strcmp(name, change_meta[i]) == 0) return 1;
  return 0;
}

/* DuckDB's row-id pseudo column (asked for when a query needs no column, e.g. count(*)). */
static const Column rowid_column = {(char*)"_rowid", (char*)"L", 0, 1};

/* The query's state with its projection, registered with DuckDB; NULL after setting an error
   for an unusable projection. */
static GlobalState* begin_init(duckdb_init_info info, const BindData* b) {
  GlobalState* g = (GlobalState*)calloc(1, sizeof(GlobalState));
  duckdb_init_set_init_data(info, g, free_global);
  g->nout = duckdb_init_get_column_count(info);
  if (g->nout > MAX_COLUMNS) {
    duckdb_init_set_error(info, "lance: the query projects more columns than this extension returns");
    return NULL;
  }
  for (size_t i = 0; i < g->nout; i++) {
    idx_t c = duckdb_init_get_column_index(info, i);
    const Column* col = c < b->ncols ? &b->cols[c] : &rowid_column;
    g->out_cols[i] = col;
    if (!col->supported) {
      char msg[512];
      snprintf(msg, sizeof msg, "lance: column %s has Arrow type '%s', which this extension cannot hand to DuckDB",
               col->name, col->format);
      duckdb_init_set_error(info, msg);
      return NULL;
    }
    if (!is_computed(col->name) && !(b->is_search == KIND_CHANGES && is_change_meta(col->name)))
      g->names[g->nnames++] = col->name;
  }
  /* Nothing to read but rows (e.g. count(*)): read the narrowest thing there is, the row ids
     (a change split returns its row ids whatever it is asked for). */
  if (g->nnames == 0 && b->is_search != KIND_CHANGES) g->names[g->nnames++] = rowid_column.name;
  return g;
}

/* lance_scan: plan one split per fragment; DuckDB runs up to one thread per split, each
   thread scanning the splits it takes in turn (lance_split_scan_v2), as a distributed
   engine's workers do. A table of fewer fragments than cores is planned again with a row
   target of its rows per core, which cuts its large fragments into row slices: a
   one-fragment table is scanned by every core. */
static void scan_init(duckdb_init_info info) {
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

static void scan_local_init(duckdb_init_info info) {
  duckdb_init_set_init_data(info, calloc(1, sizeof(LocalState)), free_local);
}

/* Open the next split into `r`; 0 when none is left, -1 after setting an error. */
static int next_split(duckdb_function_info info, const BindData* b, GlobalState* g, Reader* r) {
  size_t i = atomic_fetch_add(&g->next_split, 1);
  if (i >= g->nsplits) return 0;
  LanceSplit* split = lance_split_plan_get(g->plan, i);
  LanceScanOptions o;
  lance_scan_options_init_v2(&o, sizeof o);
  o.columns = g->names;
  o.num_columns = g->nnames;
  o.filter_sql = b->filter;
  o.batch_size = duckdb_vector_size();
  if (b->key_column) {
    o.key_filter_column = b->key_column;
    o.key_filter_texts = (const char* const*)b->keys;
    o.num_key_filter_texts = b->nkeys;
  }
  int rc = split ? lance_split_scan_v2(b->ds, split, &o, &r->stream) : LANCE_ERR_INTERNAL;
  lance_split_free(split);
  const char* err = rc == LANCE_OK ? reader_start(r, g) : lance_last_error_message();
  if (err) {
    duckdb_function_set_error(info, err);
    return -1;
  }
  return 1;
}

/* The merged vector search of `b` with columns `names` into `out`; 0 after setting an error. */
static int vector_merged(duckdb_init_info info, const BindData* b, const char** names, size_t nnames,
                         struct ArrowArrayStream* out) {
  LanceVectorQuery q;
  lance_vector_query_init_v2(&q, sizeof q);
  q.column = b->vector_column;
  q.vector = b->vector;
  q.dimension = b->dim;
  q.element_type = LANCE_ELEMENT_F32;
  q.num_queries = b->num_queries; /* 0 (one query) for lance_vector_search */
  q.k = b->k;
  q.nprobes = b->nprobes;
  q.refine_factor = b->refine_factor;
  q.distance_lower = b->distance_lower;
  q.distance_upper = b->distance_upper;
  q.distance_bounds = b->distance_bounds;
  q.prefilter_sql = b->filter;
  q.columns = names;
  q.num_columns = nnames;
  q.with_row_id = true; /* the merge breaks ties by row id */
  LanceSplitPlan* plan = NULL;
  if (lance_dataset_plan_vector_search(b->ds, b->vector_column, LANCE_METRIC_DEFAULT, true, 0, &plan) != LANCE_OK) {
    duckdb_init_set_error(info, lance_last_error_message());
    return 0;
  }
  size_t n = lance_split_plan_count(plan);
  struct ArrowArrayStream* parts = (struct ArrowArrayStream*)calloc(n ? n : 1, sizeof *parts);
  size_t got = 0;
  int ok = 1;
  for (size_t i = 0; i < n && ok; i++) {
    LanceSplit* split = lance_split_plan_get(plan, i);
    ok = split && lance_split_search_v2(b->ds, split, &q, &parts[got]) == LANCE_OK;
    if (ok) got++;
    lance_split_free(split);
  }
  lance_split_plan_free(plan);
  if (!ok) {
    duckdb_init_set_error(info, lance_last_error_message());
    for (size_t i = 0; i < got; i++) parts[i].release(&parts[i]);
  } else if (lance_topk_merge(parts, got, b->k, 0, out) != LANCE_OK) {
    duckdb_init_set_error(info, lance_last_error_message()); /* the merge released the parts */
    ok = 0;
  }
  free(parts);
  return ok;
}

/* One split of every split of `plan` of `kind` (lance_splits_combine), NULL when it has none or
   on failure (`*failed` set). */
static LanceSplit* combine_kind(const LanceSplitPlan* plan, int32_t kind, int* failed) {
  size_t n = lance_split_plan_count(plan), m = 0;
  LanceSplit** mine = (LanceSplit**)calloc(n ? n : 1, sizeof *mine);
  for (size_t i = 0; i < n; i++) {
    LanceSplit* s = lance_split_plan_get(plan, i);
    if (s && lance_split_kind(s) == kind) mine[m++] = s;
    else lance_split_free(s);
  }
  LanceSplit* out = NULL;
  if (m > 0 && lance_splits_combine((const LanceSplit* const*)mine, m, &out) != LANCE_OK) *failed = 1;
  for (size_t i = 0; i < m; i++) lance_split_free(mine[i]);
  free(mine);
  return out;
}

/* The merged full-text search of `b` with columns `names` into `out`: plan; the index segments
   searched as one split and the unindexed fragments as another, with the corpus statistics
   computed once — or, on a fully indexed snapshot, the one split of every segment searched
   without a statistics pass (it is the whole corpus); merged by score. 0 after setting an
   error. */
static int text_merged(duckdb_init_info info, const BindData* b, const char** names, size_t nnames,
                       struct ArrowArrayStream* out) {
  LanceTextQuery q;
  lance_text_query_init(&q, sizeof q);
  q.column = b->text_column;
  q.text = b->text;
  q.match_kind = b->match_kind;
  q.slop = b->slop;
  q.k = b->k;
  q.prefilter_sql = b->filter;
  q.columns = names;
  q.num_columns = nnames;
  q.with_row_id = true;
  LanceSplitPlan* plan = NULL;
  if (lance_dataset_plan_fts(b->ds, b->text_column, 0, &plan) != LANCE_OK) {
    duckdb_init_set_error(info, lance_last_error_message());
    return 0;
  }
  int failed = 0;
  LanceSplit* splits[2];
  splits[0] = combine_kind(plan, LANCE_SPLIT_FTS_SEGMENT, &failed);
  splits[1] = failed ? NULL : combine_kind(plan, LANCE_SPLIT_FTS_FLAT, &failed);
  lance_split_plan_free(plan);
  uint8_t* stats = NULL;
  size_t stats_len = 0;
  struct ArrowArrayStream parts[2];
  size_t got = 0;
  int ok = !failed;
  /* Fully indexed: the segments are the whole corpus, searched without statistics. Should the
     plan have left an index segment out (one covering no fragment of its own, which Lance does
     not keep after deletes), the library refuses that before reading anything, and the
     statistics are computed as below. */
  if (ok && splits[0] && !splits[1] && lance_split_fts_search(b->ds, splits[0], &q, NULL, 0, &parts[0]) == LANCE_OK) {
    got = 1;
  } else if (ok) {
    /* The statistics span every segment and the tail: computed once, shipped to both splits. */
    ok = lance_dataset_fts_stats(b->ds, &q, &stats, &stats_len, NULL) == LANCE_OK;
    for (size_t i = 0; i < 2 && ok; i++) {
      if (!splits[i]) continue;
      ok = lance_split_fts_search(b->ds, splits[i], &q, stats, stats_len, &parts[got]) == LANCE_OK;
      if (ok) got++;
    }
  }
  lance_split_free(splits[0]);
  lance_split_free(splits[1]);
  lance_bytes_free(stats, stats_len);
  if (!ok) {
    duckdb_init_set_error(info, lance_last_error_message());
    for (size_t i = 0; i < got; i++) parts[i].release(&parts[i]);
  } else if (lance_fts_merge(parts, got, b->k, 0, out) != LANCE_OK) {
    duckdb_init_set_error(info, lance_last_error_message());
    ok = 0;
  }
  return ok;
}

static void search_init(duckdb_init_info info) {
  BindData* b = (BindData*)duckdb_init_get_bind_data(info);
  GlobalState* g = begin_init(info, b);
  if (!g) return;
  duckdb_init_set_max_threads(info, 1);
  if (!vector_merged(info, b, g->names, g->nnames, &g->single.stream)) return;
  const char* err = reader_start(&g->single, g);
  if (err) duckdb_init_set_error(info, err);
}

static void fts_init(duckdb_init_info info) {
  BindData* b = (BindData*)duckdb_init_get_bind_data(info);
  GlobalState* g = begin_init(info, b);
  if (!g) return;
  duckdb_init_set_max_threads(info, 1);
  if (!text_merged(info, b, g->names, g->nnames, &g->single.stream)) return;
  const char* err = reader_start(&g->single, g);
  if (err) duckdb_init_set_error(info, err);
}

/* lance_hybrid_search: the merged vector and full-text results (row ids only), fused by
   lance_rrf_merge, then the projected columns of the fused rows taken by row id. */
static void hybrid_init(duckdb_init_info info) {
  BindData* b = (BindData*)duckdb_init_get_bind_data(info);
  GlobalState* g = begin_init(info, b);
  if (!g) return;
  duckdb_init_set_max_threads(info, 1);
  const char* rowid_only[] = {"_rowid"};
  struct ArrowArrayStream vec, text, fused;
  if (!vector_merged(info, b, rowid_only, 1, &vec)) return;
  if (!text_merged(info, b, rowid_only, 1, &text)) {
    vec.release(&vec);
    return;
  }
  if (lance_rrf_merge(&vec, &text, b->k, b->rrf_k, &fused) != LANCE_OK) {
    duckdb_init_set_error(info, lance_last_error_message());
    return;
  }
  /* Read the fused rows: _rowid, _relevance_score, _distance, _score (in that order). */
  uint64_t* ids = (uint64_t*)calloc(b->k, sizeof(uint64_t));
  for (int c = 0; c < 3; c++) {
    g->fused[c] = (float*)calloc(b->k, sizeof(float));
    g->fused_null[c] = (uint8_t*)calloc(b->k, 1);
  }
  size_t n = 0;
  for (;;) {
    struct ArrowArray a;
    if (fused.get_next(&fused, &a) != 0) {
      duckdb_init_set_error(info, fused.get_last_error(&fused));
      fused.release(&fused);
      free(ids);
      return;
    }
    if (!a.release) break;
    for (int64_t i = 0; i < a.length && n < b->k; i++, n++) {
      ids[n] = ((const uint64_t*)a.children[0]->buffers[1])[a.children[0]->offset + i];
      for (int c = 0; c < 3; c++) {
        const struct ArrowArray* col = a.children[c + 1];
        g->fused[c][n] = ((const float*)col->buffers[1])[col->offset + i];
        g->fused_null[c][n] = !is_valid(col, i);
      }
    }
    a.release(&a);
  }
  fused.release(&fused);
  g->fused_n = n;
  if (lance_dataset_take_rows(b->ds, ids, n, g->names, g->nnames, &g->single.stream) != LANCE_OK) {
    duckdb_init_set_error(info, lance_last_error_message());
    free(ids);
    return;
  }
  free(ids);
  const char* err = reader_start(&g->single, g);
  if (err) duckdb_init_set_error(info, err);
}

static int is_valid(const struct ArrowArray* a, int64_t i) {
  if (a->null_count == 0 || a->n_buffers == 0 || a->buffers[0] == NULL) return 1;
  int64_t j = a->offset + i;
  return (((const uint8_t*)a->buffers[0])[j >> 3] >> (j & 7)) & 1;
}

static size_t width_of(const char* fmt) {
  switch (fmt[0]) {
    case 'c': case 'C': return 1;
    case 's': case 'S': return 2;
    case 'i': case 'I': case 'f': return 4;
    case 'l': case 'L': case 'g': return 8;
    default: return 0;
  }
}

/* Copy rows [from, from + n) of Arrow array `a` (format `fmt`) into DuckDB vector `v`. */
static void copy_rows(const struct ArrowArray* a, const struct ArrowSchema* type, size_t list_size, int64_t from,
                      idx_t n, duckdb_vector v) {
  const char* fmt = type->format;
  size_t child_width = type->n_children == 1 ? width_of(type->children[0]->format) : 0;
  uint64_t* validity = NULL;
  if (a->null_count != 0) {
    duckdb_vector_ensure_validity_writable(v);
    validity = duckdb_vector_get_validity(v);
  }
  size_t w = width_of(fmt);
  if (strcmp(fmt, "tdD") == 0) w = 4;
  if (strcmp(fmt, "tsu:") == 0) w = 8;
  if (strncmp(fmt, "d:", 2) == 0) {
    /* decimal128: 16-byte little-endian integers; DuckDB stores DECIMAL(p, s) in 2, 4, 8 or 16
       bytes by p (the values fit by the precision both sides declare) */
    int p = atoi(fmt + 2);
    const int64_t* in = (const int64_t*)a->buffers[1] + 2 * (a->offset + from);
    void* out = duckdb_vector_get_data(v);
    for (idx_t i = 0; i < n; i++) {
      int64_t lo = in[2 * i];
      if (p <= 4) ((int16_t*)out)[i] = (int16_t)lo;
      else if (p <= 9) ((int32_t*)out)[i] = (int32_t)lo;
      else if (p <= 18) ((int64_t*)out)[i] = lo;
      else {
        duckdb_hugeint h;
        h.lower = (uint64_t)lo;
        h.upper = in[2 * i + 1];
        ((duckdb_hugeint*)out)[i] = h;
      }
    }
  } else if (w > 0) {
    memcpy(duckdb_vector_get_data(v), (const uint8_t*)a->buffers[1] + (size_t)(a->offset + from) * w, n * w);
  } else if (fmt[0] == 'b') {
    bool* out = (bool*)duckdb_vector_get_data(v);
    const uint8_t* bits = (const uint8_t*)a->buffers[1];
    for (idx_t i = 0; i < n; i++) {
      int64_t j = a->offset + from + (int64_t)i;
      out[i] = (bits[j >> 3] >> (j & 7)) & 1;
    }
  } else if (fmt[0] == 'u' || fmt[0] == 'U') {
    const char* data = (const char*)a->buffers[2];
    for (idx_t i = 0; i < n; i++) {
      int64_t j = a->offset + from + (int64_t)i;
      int64_t start, end;
      if (fmt[0] == 'u') {
        start = ((const int32_t*)a->buffers[1])[j];
        end = ((const int32_t*)a->buffers[1])[j + 1];
      } else {
        start = ((const int64_t*)a->buffers[1])[j];
        end = ((const int64_t*)a->buffers[1])[j + 1];
      }
      if (is_valid(a, from + (int64_t)i)) duckdb_vector_assign_string_element_len(v, i, data + start, (idx_t)(end - start));
    }
  } else { /* fixed-size list of float or double: `child_width` bytes per element */
    const struct ArrowArray* child = a->children[0];
    size_t cw = child_width;
    const uint8_t* in = (const uint8_t*)child->buffers[1] + (child->offset + (a->offset + from) * (int64_t)list_size) * (int64_t)cw;
    memcpy(duckdb_vector_get_data(duckdb_array_vector_get_child(v)), in, n * list_size * cw);
  }
  if (validity)
    for (idx_t i = 0; i < n; i++)
      if (!is_valid(a, from + (int64_t)i)) duckdb_validity_set_row_invalid(validity, i);
}

static void scan_function(duckdb_function_info info, duckdb_data_chunk output) {
  BindData* b = (BindData*)duckdb_function_get_bind_data(info);
  GlobalState* g = (GlobalState*)duckdb_function_get_init_data(info);
  /* lance_scan and lance_changes read splits per thread; the searches read one merged stream */
  LocalState* l = b->is_search && b->is_search != KIND_CHANGES ? NULL : (LocalState*)duckdb_function_get_local_init_data(info);
  Reader* r = l ? &l->reader : &g->single;
  for (;;) {
    if (r->active && r->batch.release && r->row < r->batch.length) break;
    if (r->active) {
      if (r->batch.release) r->batch.release(&r->batch);
      memset(&r->batch, 0, sizeof r->batch);
      r->row = 0;
      int rc = r->stream.get_next(&r->stream, &r->batch);
      if (rc != 0) {
        char msg[4096];
        snprintf(msg, sizeof msg, "lance: reading failed (errno %d): %s", rc, r->stream.get_last_error(&r->stream));
        duckdb_function_set_error(info, msg);
        return;
      }
      if (r->batch.release) continue;
      reader_close(r); /* this stream is done */
    }
    int opened = l ? next_split(info, b, g, r) : 0;
    if (opened < 0) return;
    if (opened == 0) {
      duckdb_data_chunk_set_size(output, 0);
      return;
    }
  }
  int64_t left = r->batch.length - r->row;
  idx_t n = (idx_t)(left < (int64_t)duckdb_vector_size() ? left : (int64_t)duckdb_vector_size());
  for (size_t i = 0; i < g->nout; i++) {
    duckdb_vector out = duckdb_data_chunk_get_vector(output, i);
    if (r->src[i] == -2) { /* a fused score of lance_hybrid_search, by output row */
      const char* name = g->out_cols[i]->name;
      int c = strcmp(name, "_relevance_score") == 0 ? 0 : (strcmp(name, "_distance") == 0 ? 1 : 2);
      float* dst = (float*)duckdb_vector_get_data(out);
      for (idx_t j = 0; j < n; j++) {
        size_t at = g->emitted + j;
        dst[j] = at < g->fused_n ? g->fused[c][at] : 0.0f;
        if (at >= g->fused_n || g->fused_null[c][at]) {
          duckdb_vector_ensure_validity_writable(out);
          duckdb_validity_set_row_invalid(duckdb_vector_get_validity(out), j);
        }
      }
      continue;
    }
    if (r->src[i] == -3) { /* query_index of a batch of one query */
      memset(duckdb_vector_get_data(out), 0, n * sizeof(int32_t));
      continue;
    }
    copy_rows(r->batch.children[r->src[i]], r->schema.children[r->src[i]], g->out_cols[i]->list_size, r->row, n,
              out);
  }
  r->row += (int64_t)n;
  g->emitted += n;
  duckdb_data_chunk_set_size(output, n);
}

/* lance_host_data_cache: the figures, read at bind. */
#define CACHE_FIGURES 13
static const char* cache_names[CACHE_FIGURES] = {
    "memory_capacity", "disk_capacity", "disk_enabled", "hits", "misses", "hit_bytes", "storage_requests",
    "storage_bytes", "evictions", "errors", "memory_bytes", "disk_bytes", "disk_write_drops"};

typedef struct {
  uint64_t values[CACHE_FIGURES];
  int done;
} CacheRow;

static int cache_u64_param(duckdb_bind_info info, const char* name, uint64_t* out) {
  duckdb_value v = duckdb_bind_get_named_parameter(info, name);
  if (!v) return 0;
  int64_t n = duckdb_get_int64(v);
  duckdb_destroy_value(&v);
  *out = n < 0 ? UINT64_MAX : (uint64_t)n; /* negative: rejected by lance-host as too large */
  return 1;
}

static void cache_bind(duckdb_bind_info info) {
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

static void cache_init(duckdb_init_info info) { (void)info; }

static void cache_function(duckdb_function_info info, duckdb_data_chunk output) {
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

static int register_cache_function(duckdb_connection con) {
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
static void changes_bind(duckdb_bind_info info) {
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

static void changes_init(duckdb_init_info info) {
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

static int register_changes_function(duckdb_connection con) {
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

static int register_function(duckdb_connection con, const char* name, duckdb_table_function_bind_t bind,
                             duckdb_table_function_init_t init, int kind) {
  duckdb_table_function f = duckdb_create_table_function();
  duckdb_table_function_set_name(f, name);
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
  duckdb_logical_type dbl = duckdb_create_logical_type(DUCKDB_TYPE_DOUBLE);
  duckdb_logical_type list = duckdb_create_list_type(dbl);
  duckdb_logical_type lists = duckdb_create_list_type(list);
  duckdb_table_function_add_parameter(f, varchar); /* uri */
  if (kind == KIND_VECTOR || kind == KIND_HYBRID || kind == KIND_BATCH) {
    duckdb_table_function_add_parameter(f, varchar);                       /* vector column */
    duckdb_table_function_add_parameter(f, kind == KIND_BATCH ? lists : list); /* vector(s) */
    duckdb_table_function_add_named_parameter(f, "nprobes", bigint);
    duckdb_table_function_add_named_parameter(f, "refine", bigint);
    duckdb_table_function_add_named_parameter(f, "distance_lower", dbl);
    duckdb_table_function_add_named_parameter(f, "distance_upper", dbl);
  }
  if (kind == KIND_FTS || kind == KIND_HYBRID) {
    duckdb_table_function_add_parameter(f, varchar); /* text column */
    duckdb_table_function_add_parameter(f, varchar); /* query */
    duckdb_table_function_add_named_parameter(f, "operator", varchar);
    duckdb_table_function_add_named_parameter(f, "slop", bigint);
  }
  if (kind == KIND_HYBRID) duckdb_table_function_add_named_parameter(f, "rrf_k", dbl);
  if (kind != 0) duckdb_table_function_add_parameter(f, bigint); /* k */
  duckdb_table_function_add_named_parameter(f, "filter", varchar);
  duckdb_table_function_add_named_parameter(f, "version", bigint);
  duckdb_table_function_add_named_parameter(f, "branch", varchar);
  duckdb_logical_type varchars = duckdb_create_list_type(varchar);
  if (kind == 0) {
    duckdb_table_function_add_named_parameter(f, "key_column", varchar);
    duckdb_table_function_add_named_parameter(f, "keys", varchars);
  }
  duckdb_destroy_logical_type(&varchars);
  duckdb_table_function_set_bind(f, bind);
  duckdb_table_function_set_init(f, init);
  if (kind == 0) duckdb_table_function_set_local_init(f, scan_local_init);
  duckdb_table_function_set_function(f, scan_function);
  duckdb_table_function_supports_projection_pushdown(f, true);
  duckdb_state st = duckdb_register_table_function(con, f);
  duckdb_destroy_logical_type(&varchar);
  duckdb_destroy_logical_type(&bigint);
  duckdb_destroy_logical_type(&lists);
  duckdb_destroy_logical_type(&list);
  duckdb_destroy_logical_type(&dbl);
  duckdb_destroy_table_function(&f);
  return st == DuckDBSuccess;
}

/* ---- lance_aggregate(uri, group_by := [...], aggregates := [...], filter := ..., version := ...)
   The aggregate runs inside lance-host (lance_dataset_aggregate: partial states per split of
   the pinned table, merged); DuckDB receives the few result rows. */

/* Parse "count(*)", "sum(col)", ... (any case, spaces around) into a function and a column
   (NULL for COUNT(*)); 0 when it is not one. */
static int parse_aggregate(const char* text, int32_t* function, char** column) {
  while (*text == ' ') text++;
  const char* open = strchr(text, '(');
  const char* close = strrchr(text, ')');
  if (!open || !close || close < open) return 0;
  for (const char* t = close + 1; *t; t++)
    if (*t != ' ') return 0;
  size_t flen = (size_t)(open - text);
  while (flen > 0 && text[flen - 1] == ' ') flen--;
  const char* a = open + 1;
  const char* e = close;
  while (a < e && *a == ' ') a++;
  while (e > a && e[-1] == ' ') e--;
  if (e == a) return 0;
  static const struct {
    const char* name;
    int32_t code;
  } names[] = {{"count", LANCE_AGG_COUNT}, {"sum", LANCE_AGG_SUM}, {"min", LANCE_AGG_MIN},
               {"max", LANCE_AGG_MAX},     {"avg", LANCE_AGG_AVG}, {"mean", LANCE_AGG_AVG}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (strlen(names[i].name) == flen && strncasecmp(text, names[i].name, flen) == 0) {
      *function = names[i].code;
      if (e - a == 1 && *a == '*') {
        if (names[i].code != LANCE_AGG_COUNT) return 0;
        *function = LANCE_AGG_COUNT_STAR;
        *column = NULL;
        return 1;
      }
      *column = (char*)malloc((size_t)(e - a) + 1);
      memcpy(*column, a, (size_t)(e - a));
      (*column)[e - a] = 0;
      return 1;
    }
  }
  return 0;
}

/* Run the bind's aggregate into `out`; 0 after setting `*err` (the library's message). */
static int run_aggregate(BindData* b, struct ArrowArrayStream* out, const char** err) {
  LanceAggregateSpec spec;
  if (lance_aggregate_init_v2(&spec, sizeof spec) != LANCE_OK) {
    *err = lance_last_error_message();
    return 0;
  }
  spec.group_by = (const char* const*)b->agg_group;
  spec.num_group_by = b->agg_ngroup;
  spec.functions = b->agg_function;
  spec.columns = (const char* const*)b->agg_column;
  spec.num_aggregates = b->agg_n;
  spec.filter_sql = b->filter;
  if (lance_dataset_aggregate(b->ds, &spec, out, NULL) != LANCE_OK) {
    *err = lance_last_error_message();
    return 0;
  }
  return 1;
}

static void aggregate_bind(duckdb_bind_info info) {
  BindData* b = (BindData*)calloc(1, sizeof(BindData));
  b->is_search = KIND_AGGREGATE;
  duckdb_bind_set_bind_data(info, b, free_bind);
  char* uri = varchar_arg(info, 0);
  uint64_t version = 0;
  duckdb_value v = duckdb_bind_get_named_parameter(info, "group_by");
  if (v) {
    size_t n = (size_t)duckdb_get_list_size(v);
    for (size_t i = 0; i < n && b->agg_ngroup < 64; i++) {
      duckdb_value e = duckdb_get_list_child(v, i);
      b->agg_group[b->agg_ngroup++] = varchar_param(e);
      duckdb_destroy_value(&e);
    }
    duckdb_destroy_value(&v);
    if (n > 64) {
      duckdb_bind_set_error(info, "lance_aggregate: at most 64 group_by columns");
      free(uri);
      return;
    }
  }
  v = duckdb_bind_get_named_parameter(info, "aggregates");
  size_t n = v ? (size_t)duckdb_get_list_size(v) : 0;
  if (n == 0 || n > 1024) {
    duckdb_bind_set_error(info, "lance_aggregate: give aggregates := ['count(*)', 'sum(col)', ...] (1 to 1024 of them)");
    if (v) duckdb_destroy_value(&v);
    free(uri);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    duckdb_value e = duckdb_get_list_child(v, i);
    char* text = varchar_param(e);
    duckdb_destroy_value(&e);
    char* column = NULL;
    int32_t function = 0;
    if (!parse_aggregate(text, &function, &column)) {
      char msg[512];
      snprintf(msg, sizeof msg,
               "lance_aggregate: aggregate %zu is '%.200s'; write count(*), count(col), sum(col), min(col), max(col) or avg(col)",
               i, text);
      duckdb_bind_set_error(info, msg);
      free(text);
      duckdb_destroy_value(&v);
      free(uri);
      return;
    }
    free(text);
    b->agg_function[b->agg_n] = function;
    b->agg_column[b->agg_n++] = column;
  }
  duckdb_destroy_value(&v);
  if (bind_named(info, b, &version)) bind_open(info, b, uri, version);
  free(uri);
  if (!b->ds) return;
  const char* err = NULL;
  if (!run_aggregate(b, &b->agg_pending, &err)) {
    duckdb_bind_set_error(info, err);
    return;
  }
  struct ArrowSchema schema;
  if (b->agg_pending.get_schema(&b->agg_pending, &schema) != 0) {
    duckdb_bind_set_error(info, b->agg_pending.get_last_error(&b->agg_pending));
    return;
  }
  if (schema.n_children > MAX_COLUMNS) {
    char msg[256];
    snprintf(msg, sizeof msg, "lance_aggregate: the result has %lld columns; this extension returns at most %d",
             (long long)schema.n_children, MAX_COLUMNS);
    schema.release(&schema);
    duckdb_bind_set_error(info, msg);
    return;
  }
  for (int64_t i = 0; i < schema.n_children; i++) {
    const struct ArrowSchema* f = schema.children[i];
    Column* c = &b->cols[b->ncols++];
    c->name = dup_str(f->name);
    c->format = dup_str(f->format);
    duckdb_logical_type t = duck_type(f, &c->list_size);
    c->supported = t != NULL && c->list_size == 0;
    if (!c->supported) {
      char msg[512];
      snprintf(msg, sizeof msg,
               "lance_aggregate: result column %s has Arrow type '%s', which this extension cannot hand to DuckDB",
               f->name, f->format);
      if (t) duckdb_destroy_logical_type(&t);
      schema.release(&schema);
      duckdb_bind_set_error(info, msg);
      return;
    }
    duckdb_bind_add_result_column(info, f->name, t);
    duckdb_destroy_logical_type(&t);
  }
  schema.release(&schema);
}

static void aggregate_init(duckdb_init_info info) {
  BindData* b = (BindData*)duckdb_init_get_bind_data(info);
  GlobalState* g = begin_init(info, b);
  if (!g) return;
  duckdb_init_set_max_threads(info, 1);
  if (b->agg_pending.release) {
    g->single.stream = b->agg_pending;
    memset(&b->agg_pending, 0, sizeof b->agg_pending);
  } else {
    const char* err = NULL;
    if (!run_aggregate(b, &g->single.stream, &err)) {
      duckdb_init_set_error(info, err);
      return;
    }
  }
  const char* err = reader_start(&g->single, g);
  if (err) duckdb_init_set_error(info, err);
}

static int register_aggregate_function(duckdb_connection con) {
  duckdb_table_function f = duckdb_create_table_function();
  duckdb_table_function_set_name(f, "lance_aggregate");
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
  duckdb_logical_type list = duckdb_create_list_type(varchar);
  duckdb_table_function_add_parameter(f, varchar); /* uri */
  duckdb_table_function_add_named_parameter(f, "group_by", list);
  duckdb_table_function_add_named_parameter(f, "aggregates", list);
  duckdb_table_function_add_named_parameter(f, "filter", varchar);
  duckdb_table_function_add_named_parameter(f, "version", bigint);
  duckdb_table_function_set_bind(f, aggregate_bind);
  duckdb_table_function_set_init(f, aggregate_init);
  duckdb_table_function_set_function(f, scan_function);
  duckdb_state st = duckdb_register_table_function(con, f);
  duckdb_destroy_logical_type(&varchar);
  duckdb_destroy_logical_type(&bigint);
  duckdb_destroy_logical_type(&list);
  duckdb_destroy_table_function(&f);
  return st == DuckDBSuccess;
}

/* ---- lance_blob_read(uri, column, row_id, offset, length) -> BLOB ------------------------- */

static int row_valid(duckdb_vector v, idx_t row) {
  uint64_t* validity = duckdb_vector_get_validity(v);
  return duckdb_validity_row_is_valid(validity, row);
}

/* A VARCHAR input value as a NUL-terminated copy (caller frees). */
static char* string_at(duckdb_vector v, idx_t row) {
  duckdb_string_t* strings = (duckdb_string_t*)duckdb_vector_get_data(v);
  uint32_t len = duckdb_string_t_length(strings[row]);
  char* out = (char*)malloc((size_t)len + 1);
  memcpy(out, duckdb_string_t_data(&strings[row]), len);
  out[len] = '\0';
  return out;
}

static void set_null(duckdb_vector out, idx_t row) {
  duckdb_vector_ensure_validity_writable(out);
  duckdb_validity_set_row_invalid(duckdb_vector_get_validity(out), row);
}

/* The tables one DuckDB thread's lance_blob_read opened during a query (the function's state,
   destroyed when the query ends): each table is opened once and its version read for the rest
   of the query. At most BLOB_TABLES are kept; the oldest is closed to make room. */
#define BLOB_TABLES 8
typedef struct {
  char* uri[BLOB_TABLES];
  LanceDataset* ds[BLOB_TABLES];
  int n;
} BlobTables;

static void blob_tables_destroy(void* p) {
  BlobTables* t = (BlobTables*)p;
  for (int i = 0; i < t->n; i++) {
    lance_dataset_free(t->ds[i]);
    free(t->uri[i]);
  }
  free(t);
}

static void blob_read_init(duckdb_init_info info) {
  BlobTables* t = (BlobTables*)calloc(1, sizeof *t);
  if (!t) {
    duckdb_scalar_function_init_set_error(info, "lance_blob_read: out of memory");
    return;
  }
  duckdb_scalar_function_init_set_state(info, t, blob_tables_destroy);
}

/* The open table of `uri`: from the thread's state, else opened (and kept there when there is
   a state). NULL with the library's error set when it cannot be opened. `*owned` says whether
   the caller frees it (no state). */
static LanceDataset* blob_table(BlobTables* t, const char* uri, int* owned) {
  *owned = 0;
  if (t) {
    for (int i = 0; i < t->n; i++) {
      if (strcmp(t->uri[i], uri) == 0) return t->ds[i];
    }
  }
  LanceDataset* ds = lance_dataset_open(uri, NULL, 0);
  if (!ds) return NULL;
  char* key = t ? (char*)malloc(strlen(uri) + 1) : NULL;
  if (key) memcpy(key, uri, strlen(uri) + 1);
  if (!t || !key) {
    *owned = 1;
    return ds;
  }
  if (t->n == BLOB_TABLES) {
    lance_dataset_free(t->ds[0]);
    free(t->uri[0]);
    memmove(&t->ds[0], &t->ds[1], (BLOB_TABLES - 1) * sizeof t->ds[0]);
    memmove(&t->uri[0], &t->uri[1], (BLOB_TABLES - 1) * sizeof t->uri[0]);
    t->n--;
  }
  t->uri[t->n] = key;
  t->ds[t->n] = ds;
  t->n++;
  return ds;
}

/* Rows with the same uri and column form a run: one descriptor take for the run, then one
   range read per row. */
static void blob_read_function(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
  BlobTables* tables = (BlobTables*)duckdb_scalar_function_get_state(info);
  idx_t n = duckdb_data_chunk_get_size(input);
  duckdb_vector in[5];
  for (idx_t c = 0; c < 5; c++) in[c] = duckdb_data_chunk_get_vector(input, c);
  const uint64_t* row_ids = (const uint64_t*)duckdb_vector_get_data(in[2]);
  const int64_t* offsets = (const int64_t*)duckdb_vector_get_data(in[3]);
  const int64_t* lengths = (const int64_t*)duckdb_vector_get_data(in[4]);
  char msg[4096];
  idx_t i = 0;
  while (i < n) {
    int all_valid = 1;
    for (idx_t c = 0; c < 5; c++) all_valid &= row_valid(in[c], i);
    if (!all_valid) {
      set_null(output, i++);
      continue;
    }
    char* uri = string_at(in[0], i);
    char* column = string_at(in[1], i);
    /* The run: following rows with all arguments set and the same uri and column. */
    idx_t end = i + 1;
    while (end < n) {
      int ok = 1;
      for (idx_t c = 0; c < 5; c++) ok &= row_valid(in[c], end);
      if (!ok) break;
      char* u = string_at(in[0], end);
      char* col = string_at(in[1], end);
      ok = strcmp(u, uri) == 0 && strcmp(col, column) == 0;
      free(u);
      free(col);
      if (!ok) break;
      end++;
    }
    int owned = 0;
    LanceDataset* ds = blob_table(tables, uri, &owned);
    LanceBlobs* blobs = NULL;
    int failed = 0;
    if (!ds) {
      snprintf(msg, sizeof msg, "lance_blob_read: cannot open %s: %s", uri, lance_last_error_message());
      failed = 1;
    } else if (lance_dataset_take_blobs(ds, column, row_ids + i, end - i, &blobs) != LANCE_OK) {
      snprintf(msg, sizeof msg, "lance_blob_read: %s", lance_last_error_message());
      failed = 1;
    }
    for (idx_t r = i; r < end && !failed; r++) {
      LanceBlobInfo inf;
      memset(&inf, 0, sizeof inf);
      inf.struct_size = sizeof inf;
      if (offsets[r] < 0 || lengths[r] < 0) {
        snprintf(msg, sizeof msg, "lance_blob_read: offset and length must not be negative (row id %llu)",
                 (unsigned long long)row_ids[r]);
        failed = 1;
      } else if (lance_blobs_info(blobs, r - i, &inf) != LANCE_OK) {
        snprintf(msg, sizeof msg, "lance_blob_read: %s", lance_last_error_message());
        failed = 1;
      } else if (inf.is_null) {
        set_null(output, r);
      } else {
        uint8_t* bytes = NULL;
        size_t len = 0;
        if (lance_blobs_read_alloc(blobs, r - i, (uint64_t)offsets[r], (uint64_t)lengths[r], &bytes, &len) !=
            LANCE_OK) {
          snprintf(msg, sizeof msg, "lance_blob_read: %s", lance_last_error_message());
          failed = 1;
        } else {
          duckdb_vector_assign_string_element_len(output, r, (const char*)bytes, len);
          lance_bytes_free(bytes, len);
        }
      }
    }
    lance_blobs_free(blobs);
    if (owned) lance_dataset_free(ds);
    free(uri);
    free(column);
    if (failed) {
      duckdb_scalar_function_set_error(info, msg);
      return;
    }
    i = end;
  }
}

static int register_blob_function(duckdb_connection con) {
  duckdb_scalar_function f = duckdb_create_scalar_function();
  duckdb_scalar_function_set_name(f, "lance_blob_read");
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  duckdb_logical_type ubigint = duckdb_create_logical_type(DUCKDB_TYPE_UBIGINT);
  duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
  duckdb_logical_type blob = duckdb_create_logical_type(DUCKDB_TYPE_BLOB);
  duckdb_scalar_function_add_parameter(f, varchar); /* uri */
  duckdb_scalar_function_add_parameter(f, varchar); /* column */
  duckdb_scalar_function_add_parameter(f, ubigint); /* row id */
  duckdb_scalar_function_add_parameter(f, bigint);  /* offset */
  duckdb_scalar_function_add_parameter(f, bigint);  /* length */
  duckdb_scalar_function_set_return_type(f, blob);
  duckdb_scalar_function_set_function(f, blob_read_function);
  duckdb_scalar_function_set_init(f, blob_read_init);
  duckdb_state st = duckdb_register_scalar_function(con, f);
  duckdb_destroy_logical_type(&varchar);
  duckdb_destroy_logical_type(&ubigint);
  duckdb_destroy_logical_type(&bigint);
  duckdb_destroy_logical_type(&blob);
  duckdb_destroy_scalar_function(&f);
  return st == DuckDBSuccess;
}

/* lance_duckdb_write.c */
int lance_duckdb_write_connect(duckdb_database db);
int lance_duckdb_register_writes(duckdb_connection con);

DUCKDB_EXTENSION_ENTRYPOINT(duckdb_connection connection, duckdb_extension_info info,
                            struct duckdb_extension_access* access) {
  if (lance_host_version_number() < LANCE_HOST_VERSION_NUMBER) {
    access->set_error(info, "lance_host: liblance_host is older than the header this extension was built with");
    return false;
  }
  if (!register_function(connection, "lance_scan", scan_bind, scan_init, 0) ||
      !register_function(connection, "lance_vector_search", search_bind, search_init, KIND_VECTOR) ||
      !register_function(connection, "lance_vector_search_batch", batch_bind, search_init, KIND_BATCH) ||
      !register_function(connection, "lance_fts", fts_bind, fts_init, KIND_FTS) ||
      !register_function(connection, "lance_hybrid_search", hybrid_bind, hybrid_init, KIND_HYBRID) ||
      !register_aggregate_function(connection) || !register_blob_function(connection) ||
      !register_cache_function(connection) || !register_changes_function(connection) ||
      !lance_duckdb_register_writes(connection)) {
    access->set_error(info, "lance_host: registering the table functions failed");
    return false;
  }
  duckdb_database* db = access->get_database(info);
  if (!db || !lance_duckdb_write_connect(*db)) {
    access->set_error(info, "lance_host: cannot open the connection lance_write runs its queries on");
    return false;
  }
  return true;
}
