/* A distributed host in miniature: a coordinator thread plans a vector search on a pinned
 * snapshot and serializes the splits; worker threads rebuild them, open the pinned table,
 * search; the coordinator merges the global top-K and takes the winning rows by _rowid.
 * With use_index = false the result must equal an exact top-K computed here from the raw
 * vectors. With deferred refine, index-segment splits return approximate candidates that the
 * coordinator merges and re-ranks once (lance_dataset_refine) before the final merge.
 * argv[1] = warehouse directory. */
#include <math.h>
#include <pthread.h>

#include "test_util.h"

#define WORKERS 3
#define K 10
#define MAX_SPLITS 64
#define REFINE 4

typedef struct {
  uint8_t* bytes[MAX_SPLITS];
  size_t len[MAX_SPLITS];
  size_t count;
  float query[64];
  size_t dim;
  bool defer_refine;
  bool is_segment[MAX_SPLITS];
  struct ArrowArrayStream results[MAX_SPLITS];
} Job;

static void fill_query(LanceVectorQuery* q, const Job* job, const char** cols) {
  CHECK_OK(lance_vector_query_init_v2(q, sizeof(LanceVectorQuery)));
  q->column = "embedding";
  q->vector = job->query;
  q->dimension = job->dim;
  q->element_type = LANCE_ELEMENT_F32;
  q->k = K;
  q->nprobes = 2;
  q->columns = cols;
  q->num_columns = 1;
  q->with_row_id = true;
  q->defer_refine = job->defer_refine;
  q->refine_factor = job->defer_refine ? REFINE : 0;
}

typedef struct {
  Job* job;
  int index;
} WorkerArg;

static void* worker(void* p) {
  WorkerArg* w = (WorkerArg*)p;
  Job* job = w->job;
  for (size_t i = (size_t)w->index; i < job->count; i += WORKERS) {
    LanceSplit* split = lance_split_deserialize(job->bytes[i], job->len[i]);
    CHECK(split != NULL);
    LanceDataset* ds = lance_split_open_dataset(split, NULL); /* the pinned version */
    CHECK(ds != NULL);
    CHECK_EQ_U64(lance_dataset_version(ds), lance_split_version(split));
    LanceVectorQuery q;
    const char* cols[] = {"id"};
    fill_query(&q, job, cols);
    CHECK_OK(lance_split_search_v2(ds, split, &q, &job->results[i]));
    lance_dataset_free(ds); /* the stream outlives the handle */
    lance_split_free(split);
  }
  return NULL;
}

/* Read the first batch's column `name` (int64 or uint64) into out; returns rows. */
static size_t read_u64_col(struct ArrowArrayStream* st, const char* name, uint64_t* out, size_t cap,
                           float* dist) {
  struct ArrowSchema s;
  CHECK(st->get_schema(st, &s) == 0);
  int c = schema_index(&s, name);
  int d = dist ? schema_index(&s, "_distance") : -1;
  CHECK(c >= 0);
  size_t n = 0;
  for (;;) {
    struct ArrowArray a;
    CHECK(st->get_next(st, &a) == 0);
    if (!a.release) break;
    const struct ArrowArray* col = a.children[c];
    for (int64_t i = 0; i < a.length && n < cap; i++, n++) {
      out[n] = ((const uint64_t*)col->buffers[1])[col->offset + i];
      if (d >= 0) dist[n] = ((const float*)a.children[d]->buffers[1])[a.children[d]->offset + i];
    }
    a.release(&a);
  }
  s.release(&s);
  st->release(st);
  return n;
}

typedef struct {
  float d;
  int64_t id;
} Cand;

static int cmp_cand(const void* a, const void* b) {
  const Cand* x = (const Cand*)a;
  const Cand* y = (const Cand*)b;
  if (x->d < y->d) return -1;
  if (x->d > y->d) return 1;
  return (x->id > y->id) - (x->id < y->id);
}

/* Exact top-K by scanning (id, embedding) of the pinned snapshot. */
static void exact_top_k(const LanceDataset* ds, const float* q, size_t dim, int64_t* out) {
  LanceScanOptions o;
  CHECK_OK(lance_scan_options_init_v2(&o, sizeof(LanceScanOptions)));
  const char* cols[] = {"id", "embedding"};
  o.columns = cols;
  o.num_columns = 2;
  struct ArrowArrayStream st;
  CHECK_OK(lance_dataset_scan_v2(ds, &o, &st));
  struct ArrowSchema s;
  CHECK(st.get_schema(&st, &s) == 0);
  size_t cap = 4096, n = 0;
  Cand* all = (Cand*)malloc(cap * sizeof(Cand));
  for (;;) {
    struct ArrowArray a;
    CHECK(st.get_next(&st, &a) == 0);
    if (!a.release) break;
    const struct ArrowArray* ids = a.children[0];
    const struct ArrowArray* fsl = a.children[1];
    const struct ArrowArray* vals = fsl->children[0];
    const float* v = (const float*)vals->buffers[1];
    for (int64_t i = 0; i < a.length; i++) {
      const float* row = v + vals->offset + (fsl->offset + i) * (int64_t)dim;
      float d = 0;
      for (size_t j = 0; j < dim; j++) d += (row[j] - q[j]) * (row[j] - q[j]);
      if (n == cap) all = (Cand*)realloc(all, (cap *= 2) * sizeof(Cand));
      all[n].d = d;
      all[n].id = ((const int64_t*)ids->buffers[1])[ids->offset + i];
      n++;
    }
    a.release(&a);
  }
  s.release(&s);
  st.release(&st);
  qsort(all, n, sizeof(Cand), cmp_cand);
  for (int i = 0; i < K; i++) out[i] = all[i].id;
  free(all);
}

/* Plan, ship, search on workers, merge, take; returns the winning ids in out_ids. */
static void run(const LanceDataset* ds, bool use_index, bool defer_refine, const float* query,
                size_t dim, int64_t* out_ids) {
  Job job;
  memset(&job, 0, sizeof job);
  memcpy(job.query, query, dim * sizeof(float));
  job.dim = dim;
  job.defer_refine = defer_refine;

  /* Coordinator: plan and serialize. */
  LanceSplitPlan* plan = NULL;
  CHECK_OK(lance_dataset_plan_vector_search(ds, "embedding", LANCE_METRIC_L2, use_index, 0, &plan));
  job.count = lance_split_plan_count(plan);
  CHECK(job.count > 0 && job.count <= MAX_SPLITS);
  size_t segments = 0;
  for (size_t i = 0; i < job.count; i++) {
    LanceSplit* s = lance_split_plan_get(plan, i);
    CHECK(s != NULL);
    job.is_segment[i] = lance_split_kind(s) == LANCE_SPLIT_INDEX_SEGMENT;
    if (job.is_segment[i]) segments++;
    CHECK_OK(lance_split_serialize(s, &job.bytes[i], &job.len[i]));
    lance_split_free(s);
  }
  CHECK(use_index ? segments >= 2 : segments == 0);
  lance_split_plan_free(plan);

  /* Workers. */
  pthread_t th[WORKERS];
  WorkerArg args[WORKERS];
  for (int t = 0; t < WORKERS; t++) {
    args[t].job = &job;
    args[t].index = t;
    CHECK(pthread_create(&th[t], NULL, worker, &args[t]) == 0);
  }
  for (int t = 0; t < WORKERS; t++) CHECK(pthread_join(th[t], NULL) == 0);
  for (size_t i = 0; i < job.count; i++) lance_bytes_free(job.bytes[i], job.len[i]);

  /* Coordinator: (re-rank the segments' candidates once,) merge and take the winners. */
  struct ArrowArrayStream merged;
  if (defer_refine) {
    struct ArrowArrayStream approx[MAX_SPLITS], exact[MAX_SPLITS + 1];
    size_t na = 0, ne = 0;
    for (size_t i = 0; i < job.count; i++) {
      if (job.is_segment[i]) approx[na++] = job.results[i];
      else exact[ne++] = job.results[i];
    }
    CHECK(na > 0);
    struct ArrowArrayStream candidates;
    CHECK_OK(lance_topk_merge(approx, na, (uint64_t)K * REFINE, 0, &candidates));
    LanceVectorQuery q;
    const char* cols[] = {"id"};
    fill_query(&q, &job, cols);
    CHECK_OK(lance_dataset_refine_v2(ds, &q, &candidates, &exact[ne++]));
    CHECK(candidates.release == NULL); /* consumed */
    CHECK_OK(lance_topk_merge(exact, ne, K, 0, &merged));
  } else {
    CHECK_OK(lance_topk_merge(job.results, job.count, K, 0, &merged));
  }
  uint64_t rowids[K];
  float dist[K];
  CHECK_EQ_U64(read_u64_col(&merged, "_rowid", rowids, K, dist), K);
  for (int i = 1; i < K; i++) CHECK(dist[i - 1] <= dist[i]);
  const char* cols[] = {"id", "_rowid"};
  struct ArrowArrayStream taken;
  CHECK_OK(lance_dataset_take_rows(ds, rowids, K, cols, 2, &taken));
  uint64_t ids[K];
  CHECK_EQ_U64(read_u64_col(&taken, "id", ids, K, NULL), K);
  for (int i = 0; i < K; i++) out_ids[i] = (int64_t)ids[i];
}

int main(int argc, char** argv) {
  CHECK(argc == 2);
  Facts facts;
  facts_load(&facts, argv[1]);
  char uri[4096];
  facts_get(&facts, "vectors.uri", uri, sizeof uri);
  size_t dim = (size_t)facts_u64(&facts, "vectors.dim");
  CHECK(dim <= 64);

  LanceDataset* ds = lance_dataset_open(uri, NULL, 0);
  CHECK(ds != NULL);
  CHECK_OK(lance_dataset_prewarm_index(ds, "emb_pq"));
  {
    /* Per-segment prewarm, as a worker does for the INDEX_SEGMENT splits routed to it: both
       segments are already warm from the prewarm above, so each counts as a cache hit. */
    LanceSplitPlan* plan = NULL;
    CHECK_OK(lance_dataset_plan_vector_search(ds, "embedding", LANCE_METRIC_L2, true, 0, &plan));
    uint8_t uuids[16 * 8];
    size_t n = 0;
    const LanceSplit* segs[8];
    for (size_t i = 0; i < lance_split_plan_count(plan); i++) {
      LanceSplit* sp = lance_split_plan_get(plan, i);
      if (lance_split_kind(sp) == LANCE_SPLIT_INDEX_SEGMENT && n < 8) {
        CHECK_OK(lance_split_segment_uuid(sp, uuids + 16 * n));
        segs[n++] = sp;
      } else {
        lance_split_free(sp);
      }
    }
    lance_split_plan_free(plan);
    CHECK(n == 2);
    /* A worker that got both segment splits runs them as one: the combined split lends the
       segments' UUIDs back to back, ready for the prewarm. */
    LanceSplit* both = NULL;
    CHECK_OK(lance_splits_combine(segs, n, &both));
    size_t count = 0;
    const uint8_t* both_uuids = lance_split_segment_uuids(both, &count);
    CHECK(count == n && both_uuids != NULL && memcmp(both_uuids, uuids, 16 * n) == 0);
    uint8_t one[16];
    CHECK(lance_split_segment_uuid(both, one) == LANCE_ERR_INVALID_ARGUMENT);
    LanceSplit* not_written = NULL;
    CHECK(lance_splits_combine(segs, 0, &not_written) == LANCE_ERR_INVALID_ARGUMENT && not_written == NULL);
    LanceIoStats io = {.struct_size = sizeof(LanceIoStats)};
    CHECK_OK(lance_dataset_prewarm_index_segments_v2(ds, "emb_pq", both_uuids, 16 * count, &io));
    lance_split_free(both);
    for (size_t i = 0; i < n; i++) lance_split_free((LanceSplit*)segs[i]);
    CHECK_EQ_U64(io.index_cache_hits, n);
    CHECK_EQ_U64(io.index_cache_misses, 0);
    CHECK(lance_dataset_prewarm_index_segments_v2(ds, "emb_pq", uuids, 16 * n - 1, NULL) ==
          LANCE_ERR_INVALID_ARGUMENT);
    CHECK(lance_dataset_prewarm_index_segments_v2(ds, "emb_pq", uuids, 0, NULL) == LANCE_ERR_INVALID_ARGUMENT);
    uuids[0] ^= 0xff;
    CHECK(lance_dataset_prewarm_index_segments_v2(ds, "emb_pq", uuids, 16, NULL) == LANCE_ERR_NOT_FOUND);
  }

  /* Query: row 777's vector, slightly moved. */
  LanceScanOptions o;
  CHECK_OK(lance_scan_options_init_v2(&o, sizeof(LanceScanOptions)));
  const char* cols[] = {"embedding"};
  o.columns = cols;
  o.num_columns = 1;
  o.filter_sql = "id = 777";
  struct ArrowArrayStream st;
  CHECK_OK(lance_dataset_scan_v2(ds, &o, &st));
  float query[64];
  read_single_vector(&st, query, dim);
  for (size_t j = 0; j < dim; j++) query[j] += 0.01f;

  int64_t exact[K], flat[K], indexed[K], deferred[K];
  exact_top_k(ds, query, dim, exact);
  run(ds, false, false, query, dim, flat);
  for (int i = 0; i < K; i++) CHECK(flat[i] == exact[i]);
  run(ds, true, false, query, dim, indexed);
  CHECK(indexed[0] == 777);
  int hits = 0, deferred_hits = 0;
  for (int i = 0; i < K; i++)
    for (int j = 0; j < K; j++) hits += indexed[i] == exact[j];
  CHECK(hits >= K / 2);
  run(ds, true, true, query, dim, deferred);
  CHECK(deferred[0] == 777);
  for (int i = 0; i < K; i++)
    for (int j = 0; j < K; j++) deferred_hits += deferred[i] == exact[j];
  CHECK(deferred_hits >= K / 2);
  lance_dataset_free(ds);
  printf("distributed_search: ok (indexed recall %d/%d, deferred refine %d/%d, flat plan exact)\n",
         hits, K, deferred_hits, K);
  return 0;
}
