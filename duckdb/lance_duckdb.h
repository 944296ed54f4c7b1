/* Shared by the lance_host DuckDB extension's files (one per function family): the DuckDB
 * C extension API, the bind/scan state types, and the helpers every table function uses. */
#ifndef LANCE_DUCKDB_H
#define LANCE_DUCKDB_H

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



#define CACHE_FIGURES 13
#define BLOB_TABLES 8

typedef struct {
  uint64_t values[CACHE_FIGURES];
  int done;
} CacheRow;

typedef struct {
  char* uri[BLOB_TABLES];
  LanceDataset* ds[BLOB_TABLES];
  int n;
} BlobTables;

extern const Column rowid_column;
/* The columns a change split adds (lance_changes). */
extern const char* const change_meta[4];

char* dup_str(const char* s);
void free_bind(void* p);
void reader_close(Reader* r);
void free_global(void* p);
void free_local(void* p);
duckdb_logical_type duck_type(const struct ArrowSchema* f, size_t* list_size);
int bind_columns(duckdb_bind_info info, BindData* b);
int is_computed(const char* name);
char* varchar_param(duckdb_value v);
char* varchar_arg(duckdb_bind_info info, idx_t i);
int bind_named(duckdb_bind_info info, BindData* b, uint64_t* version);
void bind_open(duckdb_bind_info info, BindData* b, const char* uri, uint64_t version);
int bind_keys(duckdb_bind_info info, BindData* b);
const char* reader_start(Reader* r, const GlobalState* g);
int is_change_meta(const char* name);
GlobalState* begin_init(duckdb_init_info info, const BindData* b);
int next_split(duckdb_function_info info, const BindData* b, GlobalState* g, Reader* r);
int is_valid(const struct ArrowArray* a, int64_t i);
size_t width_of(const char* fmt);
void copy_rows(const struct ArrowArray* a, const struct ArrowSchema* type, size_t list_size, int64_t from,
                      idx_t n, duckdb_vector v);
void scan_function(duckdb_function_info info, duckdb_data_chunk output);
int register_function(duckdb_connection con, const char* name, duckdb_table_function_bind_t bind,
                             duckdb_table_function_init_t init, int kind);
void scan_bind(duckdb_bind_info info);
void scan_init(duckdb_init_info info);
void scan_local_init(duckdb_init_info info);
void search_bind(duckdb_bind_info info);
void batch_bind(duckdb_bind_info info);
void text_bind(duckdb_bind_info info, int kind);
void fts_bind(duckdb_bind_info info);
void hybrid_bind(duckdb_bind_info info);
int vector_merged(duckdb_init_info info, const BindData* b, const char** names, size_t nnames,
                         struct ArrowArrayStream* out);
LanceSplit* combine_kind(const LanceSplitPlan* plan, int32_t kind, int* failed);
int text_merged(duckdb_init_info info, const BindData* b, const char** names, size_t nnames,
                       struct ArrowArrayStream* out);
void search_init(duckdb_init_info info);
void fts_init(duckdb_init_info info);
void hybrid_init(duckdb_init_info info);
int cache_u64_param(duckdb_bind_info info, const char* name, uint64_t* out);
void cache_bind(duckdb_bind_info info);
void cache_init(duckdb_init_info info);
void cache_function(duckdb_function_info info, duckdb_data_chunk output);
int register_cache_function(duckdb_connection con);
void changes_bind(duckdb_bind_info info);
void changes_init(duckdb_init_info info);
int register_changes_function(duckdb_connection con);
int parse_aggregate(const char* text, int32_t* function, char** column);
int run_aggregate(BindData* b, struct ArrowArrayStream* out, const char** err);
void aggregate_bind(duckdb_bind_info info);
void aggregate_init(duckdb_init_info info);
int register_aggregate_function(duckdb_connection con);
int row_valid(duckdb_vector v, idx_t row);
char* string_at(duckdb_vector v, idx_t row);
void set_null(duckdb_vector out, idx_t row);
void blob_tables_destroy(void* p);
void blob_read_init(duckdb_init_info info);
LanceDataset* blob_table(BlobTables* t, const char* uri, int* owned);
void blob_read_function(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output);
int register_blob_function(duckdb_connection con);

/* lance_duckdb_write.c: the writes' connection (opened at load) and their registration. */
int lance_duckdb_write_connect(duckdb_database db);
int lance_duckdb_register_writes(duckdb_connection con);

#endif
