/* lance_host DuckDB extension: the helpers every table function shares: result columns, named parameters, readers over splits, copying Arrow rows into DuckDB vectors, registration. */
#include "lance_duckdb.h"

char* dup_str(const char* s) {
  size_t n = strlen(s) + 1;
  char* d = (char*)malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

void free_bind(void* p) {
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

void reader_close(Reader* r) {
  if (r->batch.release) r->batch.release(&r->batch);
  if (r->schema.release) r->schema.release(&r->schema);
  if (r->stream.release) r->stream.release(&r->stream);
  memset(r, 0, sizeof *r);
}

void free_global(void* p) {
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

void free_local(void* p) {
  LocalState* l = (LocalState*)p;
  if (!l) return;
  reader_close(&l->reader);
  free(l);
}

/* The DuckDB type of an Arrow format, or NULL when unsupported. */
duckdb_logical_type duck_type(const struct ArrowSchema* f, size_t* list_size) {
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
int bind_columns(duckdb_bind_info info, BindData* b) {
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
int is_computed(const char* name) {
  return strcmp(name, "_distance") == 0 || strcmp(name, "_score") == 0 || strcmp(name, "_relevance_score") == 0 ||
         strcmp(name, "query_index") == 0;
}

char* varchar_param(duckdb_value v) {
  char* s = duckdb_get_varchar(v);
  char* out = dup_str(s);
  duckdb_free(s);
  return out;
}

/* Positional parameter `i` of a table function as a malloc'd string (caller frees). */
char* varchar_arg(duckdb_bind_info info, idx_t i) {
  duckdb_value v = duckdb_bind_get_parameter(info, i);
  char* out = varchar_param(v);
  duckdb_destroy_value(&v);
  return out;
}

/* Named parameters shared by both functions; returns 0 after setting an error. */
int bind_named(duckdb_bind_info info, BindData* b, uint64_t* version) {
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

void bind_open(duckdb_bind_info info, BindData* b, const char* uri, uint64_t version) {
  b->ds = b->branch ? lance_dataset_open_branch(uri, NULL, b->branch, version) : lance_dataset_open(uri, NULL, version);
  if (!b->ds) {
    char msg[4096];
    snprintf(msg, sizeof msg, "lance: cannot open %s: %s", uri, lance_last_error_message());
    duckdb_bind_set_error(info, msg);
  }
}

/* lance_scan's `key_column` and `keys`: both or neither; 0 after setting an error. */
int bind_keys(duckdb_bind_info info, BindData* b) {
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

const char* reader_start(Reader* r, const GlobalState* g) {
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
const char* const change_meta[4] = {"_rowid", "_row_created_at_version", "_row_last_updated_at_version",
                                           "_change_type"};

int is_change_meta(const char* name) {
  for (int i = 0; i < 4; i++)
    if (strcmp(name, change_meta[i]) == 0) return 1;
  return 0;
}

/* DuckDB's row-id pseudo column (asked for when a query needs no column, e.g. count(*)). */
const Column rowid_column = {(char*)"_rowid", (char*)"L", 0, 1};

/* The query's state with its projection, registered with DuckDB; NULL after setting an error
   for an unusable projection. */
GlobalState* begin_init(duckdb_init_info info, const BindData* b) {
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
/* Open the next split into `r`; 0 when none is left, -1 after setting an error. */
int next_split(duckdb_function_info info, const BindData* b, GlobalState* g, Reader* r) {
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

int is_valid(const struct ArrowArray* a, int64_t i) {
  if (a->null_count == 0 || a->n_buffers == 0 || a->buffers[0] == NULL) return 1;
  int64_t j = a->offset + i;
  return (((const uint8_t*)a->buffers[0])[j >> 3] >> (j & 7)) & 1;
}

size_t width_of(const char* fmt) {
  switch (fmt[0]) {
    case 'c': case 'C': return 1;
    case 's': case 'S': return 2;
    case 'i': case 'I': case 'f': return 4;
    case 'l': case 'L': case 'g': return 8;
    default: return 0;
  }
}

/* Copy rows [from, from + n) of Arrow array `a` (format `fmt`) into DuckDB vector `v`. */
void copy_rows(const struct ArrowArray* a, const struct ArrowSchema* type, size_t list_size, int64_t from,
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

void scan_function(duckdb_function_info info, duckdb_data_chunk output) {
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

int register_function(duckdb_connection con, const char* name, duckdb_table_function_bind_t bind,
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
