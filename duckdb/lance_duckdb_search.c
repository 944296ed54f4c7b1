/* lance_host DuckDB extension: lance_vector_search, lance_vector_search_batch, lance_fts and lance_hybrid_search. */
#include "lance_duckdb.h"

void search_bind(duckdb_bind_info info) {
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
void batch_bind(duckdb_bind_info info) {
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
void text_bind(duckdb_bind_info info, int kind) {
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

void fts_bind(duckdb_bind_info info) { text_bind(info, KIND_FTS); }
void hybrid_bind(duckdb_bind_info info) { text_bind(info, KIND_HYBRID); }

/* Start reading `r->stream`: map the projected columns to its children by name. Returns NULL or
   an error message (static or the stream's). */
/* The merged vector search of `b` with columns `names` into `out`; 0 after setting an error. */
int vector_merged(duckdb_init_info info, const BindData* b, const char** names, size_t nnames,
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
LanceSplit* combine_kind(const LanceSplitPlan* plan, int32_t kind, int* failed) {
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
int text_merged(duckdb_init_info info, const BindData* b, const char** names, size_t nnames,
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

void search_init(duckdb_init_info info) {
  BindData* b = (BindData*)duckdb_init_get_bind_data(info);
  GlobalState* g = begin_init(info, b);
  if (!g) return;
  duckdb_init_set_max_threads(info, 1);
  if (!vector_merged(info, b, g->names, g->nnames, &g->single.stream)) return;
  const char* err = reader_start(&g->single, g);
  if (err) duckdb_init_set_error(info, err);
}

void fts_init(duckdb_init_info info) {
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
void hybrid_init(duckdb_init_info info) {
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
