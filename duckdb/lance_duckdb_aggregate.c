/* lance_host DuckDB extension: lance_aggregate. */
#include "lance_duckdb.h"

/* ---- lance_aggregate(uri, group_by := [...], aggregates := [...], filter := ..., version := ...)
   The aggregate runs inside lance-host (lance_dataset_aggregate: partial states per split of
   the pinned table, merged); DuckDB receives the few result rows. */

/* Parse "count(*)", "sum(col)", ... (any case, spaces around) into a function and a column
   (NULL for COUNT(*)); 0 when it is not one. */
int parse_aggregate(const char* text, int32_t* function, char** column) {
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
               {"max", LANCE_AGG_MAX},     {"avg", LANCE_AGG_AVG}, {"mean", LANCE_AGG_AVG},
               {"approx_count_distinct", LANCE_AGG_APPROX_COUNT_DISTINCT}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (strlen(names[i].name) == flen && strncasecmp(text, names[i].name, flen) == 0) {
      *function = names[i].code;
      if (e - a == 1 && *a == '*') {
        if (names[i].code != LANCE_AGG_COUNT) return 0;
        *function = LANCE_AGG_COUNT_STAR;
        *column = NULL;
        return 1;
      }
      /* count(DISTINCT col) */
      if (names[i].code == LANCE_AGG_COUNT && e - a > 9 && strncasecmp(a, "distinct", 8) == 0 && a[8] == ' ') {
        a += 9;
        while (a < e && *a == ' ') a++;
        if (a == e) return 0;
        *function = LANCE_AGG_COUNT_DISTINCT;
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
int run_aggregate(BindData* b, struct ArrowArrayStream* out, const char** err) {
  LanceAggregateSpec spec;
  if (lance_aggregate_init_v2(&spec, sizeof spec) != LANCE_OK) {
    *err = lance_last_error_message();
    return 0;
  }
  /* An argument that names a column of the table is that column; anything else is a Lance SQL
     expression over the row (sum(l_extendedprice * (1 - l_discount))). */
  struct ArrowSchema schema;
  if (lance_dataset_schema(b->ds, &schema) != LANCE_OK) {
    *err = lance_last_error_message();
    return 0;
  }
  const char** columns = (const char**)calloc(b->agg_n ? b->agg_n : 1, sizeof(char*));
  const char** expressions = (const char**)calloc(b->agg_n ? b->agg_n : 1, sizeof(char*));
  int any_expr = 0;
  for (size_t i = 0; columns && expressions && i < b->agg_n; i++) {
    const char* a = b->agg_column[i];
    int is_column = a == NULL;
    for (int64_t c = 0; a && !is_column && c < schema.n_children; c++)
      is_column = schema.children[c]->name && strcmp(schema.children[c]->name, a) == 0;
    if (is_column) {
      columns[i] = a;
    } else {
      expressions[i] = a;
      any_expr = 1;
    }
  }
  /* A group key that names no column is a Lance SQL expression too, named by its text. */
  const char* key_exprs[64] = {0};
  int any_key_expr = 0;
  for (size_t i = 0; i < b->agg_ngroup; i++) {
    const char* g = b->agg_group[i];
    int is_column = g == NULL;
    for (int64_t c = 0; g && !is_column && c < schema.n_children; c++)
      is_column = schema.children[c]->name && strcmp(schema.children[c]->name, g) == 0;
    if (!is_column) {
      key_exprs[i] = g;
      any_key_expr = 1;
    }
  }
  if (schema.release) schema.release(&schema);
  if (!columns || !expressions) {
    free(columns);
    free(expressions);
    *err = "lance_aggregate: out of memory";
    return 0;
  }
  spec.group_by = (const char* const*)b->agg_group;
  spec.group_by_expressions = any_key_expr ? key_exprs : NULL;
  spec.num_group_by = b->agg_ngroup;
  spec.functions = b->agg_function;
  spec.columns = columns;
  spec.expressions = any_expr ? expressions : NULL;
  spec.num_aggregates = b->agg_n;
  spec.filter_sql = b->filter;
  int ok = lance_dataset_aggregate(b->ds, &spec, out, NULL) == LANCE_OK;
  if (!ok) *err = lance_last_error_message();
  free(columns);
  free(expressions);
  return ok;
}

void aggregate_bind(duckdb_bind_info info) {
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
               "lance_aggregate: aggregate %zu is '%.200s'; write count(*), count(col), count(DISTINCT col), sum(col), min(col), max(col) or avg(col) "
               "(col: a column, or a Lance SQL expression over the row)",
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

void aggregate_init(duckdb_init_info info) {
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

int register_aggregate_function(duckdb_connection con) {
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
