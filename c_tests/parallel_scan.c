/* Scan every fragment from 4 threads at once through one shared handle; the union of rows
 * must equal a full scan. argv[1] = warehouse directory. */
#include <pthread.h>

#include "test_util.h"

#define THREADS 4

typedef struct {
  int64_t* ids;
  size_t len, cap;
} IdVec;

static void push_id(int64_t v, void* ctx) {
  IdVec* vec = (IdVec*)ctx;
  if (vec->len == vec->cap) {
    vec->cap = vec->cap ? vec->cap * 2 : 256;
    vec->ids = (int64_t*)realloc(vec->ids, vec->cap * sizeof(int64_t));
    CHECK(vec->ids != NULL);
  }
  vec->ids[vec->len++] = v;
}

typedef struct {
  const LanceDataset* ds;
  const LanceFragmentInfo* frags;
  size_t nfrags;
  int index;
  IdVec out;
  unsigned long long expected_rows;
} Worker;

static void* run(void* arg) {
  Worker* w = (Worker*)arg;
  for (size_t i = (size_t)w->index; i < w->nfrags; i += THREADS) {
    LanceScanOptions o;
    CHECK_OK(lance_scan_options_init_v2(&o, sizeof(LanceScanOptions)));
    uint64_t id = w->frags[i].id;
    o.fragment_ids = &id;
    o.num_fragment_ids = 1;
    o.batch_size = 17;
    struct ArrowArrayStream st;
    CHECK_OK(lance_dataset_scan_v2(w->ds, &o, &st));
    unsigned long long rows = drain_stream(&st, "id", NULL, push_id, &w->out);
    CHECK_EQ_U64(rows, w->frags[i].logical_rows);
    w->expected_rows += rows;
  }
  return NULL;
}

static int cmp_i64(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  CHECK(argc == 2);
  Facts facts;
  facts_load(&facts, argv[1]);
  char uri[4096];
  snprintf(uri, sizeof uri, "%s/people.lance", argv[1]);
  LanceDataset* ds = lance_dataset_open(uri, NULL, 0);
  CHECK(ds != NULL);
  LanceFragmentInfo* frags = NULL;
  size_t nfrags = 0;
  CHECK_OK(lance_dataset_fragments(ds, &frags, &nfrags));
  CHECK(nfrags >= THREADS);

  Worker workers[THREADS];
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; t++) {
    memset(&workers[t], 0, sizeof workers[t]);
    workers[t].ds = ds;
    workers[t].frags = frags;
    workers[t].nfrags = nfrags;
    workers[t].index = t;
    CHECK(pthread_create(&threads[t], NULL, run, &workers[t]) == 0);
  }
  IdVec all = {0};
  for (int t = 0; t < THREADS; t++) {
    CHECK(pthread_join(threads[t], NULL) == 0);
    for (size_t i = 0; i < workers[t].out.len; i++) push_id(workers[t].out.ids[i], &all);
    free(workers[t].out.ids);
  }

  LanceScanOptions o;
  CHECK_OK(lance_scan_options_init_v2(&o, sizeof(LanceScanOptions)));
  struct ArrowArrayStream st;
  CHECK_OK(lance_dataset_scan_v2(ds, &o, &st));
  IdVec full = {0};
  drain_stream(&st, "id", NULL, push_id, &full);

  CHECK_EQ_U64(all.len, full.len);
  CHECK_EQ_U64(full.len, facts_u64(&facts, "people.v3.rows"));
  qsort(all.ids, all.len, sizeof(int64_t), cmp_i64);
  qsort(full.ids, full.len, sizeof(int64_t), cmp_i64);
  CHECK(memcmp(all.ids, full.ids, all.len * sizeof(int64_t)) == 0);

  free(all.ids);
  free(full.ids);
  lance_fragment_info_list_free(frags, nfrags);
  lance_dataset_free(ds);
  printf("parallel_scan: ok (%zu rows from %zu fragments on %d threads)\n", all.len, nfrags,
         THREADS);
  return 0;
}
