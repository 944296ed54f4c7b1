/* Full-text search across processes: the coordinator plans the docs table's full-text splits,
 * computes the corpus statistics once and writes each split's bytes and the statistics bytes
 * to files; one worker *process* per split (this program re-executed) rebuilds its split,
 * opens the pinned snapshot from it, scores the split with the shipped statistics and writes
 * (_rowid, _score) pairs back. The coordinator merges them (score descending, ties by row id)
 * and the result must equal the single-process answer (every split searched here, merged by
 * lance_fts_merge), for several queries, with and without a prefilter. Also: a split of every
 * segment of a fully indexed version is searched without statistics (stats_len 0) to the same
 * answer, and a split that is not the whole corpus is refused without them.
 * argv[1] = warehouse directory; worker mode: argv[1] = "worker", then the file paths. */
#include <math.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

#define K 10
#define MAX_SPLITS 32
#define MAX_HITS 4096

extern char** environ;

typedef struct {
  uint64_t rowid;
  float score;
} Hit;

static void fill_query(LanceTextQuery* q, const char* text, int kind, uint32_t slop, const char* filter) {
  CHECK_OK(lance_text_query_init(q, sizeof(LanceTextQuery)));
  q->column = "text";
  q->text = text;
  q->match_kind = kind;
  q->slop = slop;
  q->k = K;
  q->prefilter_sql = filter;
  q->with_row_id = true;
}

/* Read every (_rowid, _score) of a stream, then release it. */
static size_t read_hits(struct ArrowArrayStream* st, Hit* out, size_t cap) {
  struct ArrowSchema s;
  CHECK(st->get_schema(st, &s) == 0);
  int r = schema_index(&s, "_rowid");
  int c = schema_index(&s, "_score");
  CHECK(r >= 0 && c >= 0);
  size_t n = 0;
  for (;;) {
    struct ArrowArray a;
    CHECK(st->get_next(st, &a) == 0);
    if (!a.release) break;
    const struct ArrowArray* rc = a.children[r];
    const struct ArrowArray* sc = a.children[c];
    for (int64_t i = 0; i < a.length && n < cap; i++, n++) {
      out[n].rowid = ((const uint64_t*)rc->buffers[1])[rc->offset + i];
      out[n].score = ((const float*)sc->buffers[1])[sc->offset + i];
    }
    a.release(&a);
  }
  s.release(&s);
  st->release(st);
  return n;
}

static void write_file(const char* path, const void* data, size_t len) {
  FILE* f = fopen(path, "wb");
  CHECK(f != NULL);
  CHECK(fwrite(data, 1, len, f) == len);
  fclose(f);
}

static uint8_t* read_file(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  CHECK(f != NULL);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t* b = (uint8_t*)malloc(n > 0 ? (size_t)n : 1);
  CHECK(fread(b, 1, (size_t)n, f) == (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return b;
}

/* Worker: split file, stats file, query text, kind, slop, filter ("" = none), output file. */
static int worker_main(char** argv) {
  size_t split_len, stats_len;
  uint8_t* split_bytes = read_file(argv[2], &split_len);
  uint8_t* stats = read_file(argv[3], &stats_len);
  LanceSplit* split = lance_split_deserialize(split_bytes, split_len);
  CHECK(split != NULL);
  LanceDataset* ds = lance_split_open_dataset(split, NULL);
  CHECK(ds != NULL);
  LanceTextQuery q;
  fill_query(&q, argv[4], atoi(argv[5]), (uint32_t)atoi(argv[6]), argv[7][0] ? argv[7] : NULL);
  struct ArrowArrayStream st;
  CHECK_OK(lance_split_fts_search(ds, split, &q, stats, stats_len, &st));
  Hit* hits = (Hit*)malloc(MAX_HITS * sizeof(Hit));
  size_t n = read_hits(&st, hits, MAX_HITS);
  write_file(argv[8], hits, n * sizeof(Hit));
  printf("worker pid %d: split kind %d, %zu hits\n", (int)getpid(), (int)lance_split_kind(split), n);
  free(hits);
  free(split_bytes);
  free(stats);
  lance_dataset_free(ds);
  lance_split_free(split);
  return 0;
}

static int cmp_hit(const void* a, const void* b) {
  const Hit* x = (const Hit*)a;
  const Hit* y = (const Hit*)b;
  if (x->score > y->score) return -1;
  if (x->score < y->score) return 1;
  return (x->rowid > y->rowid) - (x->rowid < y->rowid);
}

static void check_query(const char* self, const char* dir, const char* uri, const char* text, int kind,
                        uint32_t slop, const char* filter) {
  LanceDataset* ds = lance_dataset_open(uri, NULL, 0);
  CHECK(ds != NULL);
  LanceSplitPlan* plan = NULL;
  CHECK_OK(lance_dataset_plan_fts(ds, "text", 0, &plan));
  size_t count = lance_split_plan_count(plan);
  CHECK(count >= 3 && count <= MAX_SPLITS);
  LanceTextQuery q;
  fill_query(&q, text, kind, slop, filter);
  uint8_t* stats = NULL;
  size_t stats_len = 0;
  CHECK_OK(lance_dataset_fts_stats(ds, &q, &stats, &stats_len, NULL));
  char stats_path[512];
  snprintf(stats_path, sizeof stats_path, "%s/stats.bin", dir);
  write_file(stats_path, stats, stats_len);

  /* Single-process answer: every split here, merged by the library. */
  struct ArrowArrayStream streams[MAX_SPLITS];
  pid_t pids[MAX_SPLITS];
  char out_paths[MAX_SPLITS][512];
  char kind_s[8], slop_s[16];
  snprintf(kind_s, sizeof kind_s, "%d", kind);
  snprintf(slop_s, sizeof slop_s, "%u", slop);
  for (size_t i = 0; i < count; i++) {
    LanceSplit* s = lance_split_plan_get(plan, i);
    CHECK_OK(lance_split_fts_search(ds, s, &q, stats, stats_len, &streams[i]));
    uint8_t* b = NULL;
    size_t n = 0;
    CHECK_OK(lance_split_serialize(s, &b, &n));
    char split_path[512];
    snprintf(split_path, sizeof split_path, "%s/split%zu.bin", dir, i);
    write_file(split_path, b, n);
    lance_bytes_free(b, n);
    snprintf(out_paths[i], sizeof out_paths[i], "%s/hits%zu.bin", dir, i);
    char* args[] = {"distributed_fts", "worker", split_path, stats_path, (char*)text, kind_s, slop_s,
                    (char*)(filter ? filter : ""), out_paths[i], NULL};
    /* This very program, as a separate worker process. */
    CHECK(posix_spawn(&pids[i], self, NULL, NULL, args, environ) == 0);
    lance_split_free(s);
  }
  struct ArrowArrayStream merged;
  CHECK_OK(lance_fts_merge(streams, count, K, 0, &merged));
  Hit single[K];
  size_t n_single = read_hits(&merged, single, K);

  /* The workers' answers, merged here. */
  Hit* all = (Hit*)malloc(MAX_HITS * sizeof(Hit));
  size_t n_all = 0;
  for (size_t i = 0; i < count; i++) {
    int status = 0;
    CHECK(waitpid(pids[i], &status, 0) == pids[i]);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(pids[i] != getpid());
    size_t len = 0;
    uint8_t* b = read_file(out_paths[i], &len);
    CHECK(len % sizeof(Hit) == 0 && n_all + len / sizeof(Hit) <= MAX_HITS);
    memcpy(all + n_all, b, len);
    n_all += len / sizeof(Hit);
    free(b);
  }
  qsort(all, n_all, sizeof(Hit), cmp_hit);
  size_t n_workers = n_all < K ? n_all : K;
  CHECK_EQ_U64(n_workers, n_single);
  for (size_t i = 0; i < n_single; i++) {
    CHECK_EQ_U64(all[i].rowid, single[i].rowid);
    CHECK(all[i].score == single[i].score);
  }
  printf("query '%s' kind %d filter %s: %zu hits from %zu worker processes equal the single-process answer\n",
         text, kind, filter ? filter : "none", n_single, count);
  free(all);
  lance_bytes_free(stats, stats_len);
  lance_split_plan_free(plan);
  lance_dataset_free(ds);
}

/* The latest version of `uri` whose full-text plan has segment splits only (at least two), or 0. */
static uint64_t fully_indexed_version(const char* uri) {
  LanceDataset* latest = lance_dataset_open(uri, NULL, 0);
  CHECK(latest != NULL);
  uint64_t found = 0;
  for (uint64_t v = lance_dataset_version(latest); v >= 1 && !found; v--) {
    LanceDataset* ds = lance_dataset_open(uri, NULL, v);
    CHECK(ds != NULL);
    LanceSplitPlan* plan = NULL;
    if (lance_dataset_plan_fts(ds, "text", 0, &plan) == LANCE_OK) {
      size_t n = lance_split_plan_count(plan), segments = 0;
      for (size_t i = 0; i < n; i++) {
        LanceSplit* s = lance_split_plan_get(plan, i);
        segments += lance_split_kind(s) == LANCE_SPLIT_FTS_SEGMENT;
        lance_split_free(s);
      }
      if (n >= 2 && segments == n) found = v;
      lance_split_plan_free(plan);
    }
    lance_dataset_free(ds);
  }
  lance_dataset_free(latest);
  return found;
}

/* One split of every split of `ds`'s full-text plan of `kind` (-1: every kind); NULL if none. */
static LanceSplit* combine_kind(LanceDataset* ds, int kind) {
  LanceSplitPlan* plan = NULL;
  CHECK_OK(lance_dataset_plan_fts(ds, "text", 0, &plan));
  size_t n = lance_split_plan_count(plan), m = 0;
  CHECK(n <= MAX_SPLITS);
  LanceSplit* parts[MAX_SPLITS];
  for (size_t i = 0; i < n; i++) {
    LanceSplit* s = lance_split_plan_get(plan, i);
    if (kind < 0 || lance_split_kind(s) == kind) parts[m++] = s;
    else lance_split_free(s);
  }
  LanceSplit* out = NULL;
  if (m > 0) CHECK_OK(lance_splits_combine((const LanceSplit* const*)parts, m, &out));
  for (size_t i = 0; i < m; i++) lance_split_free(parts[i]);
  lance_split_plan_free(plan);
  return out;
}

static void check_whole_corpus(const char* uri) {
  uint64_t v = fully_indexed_version(uri);
  CHECK(v > 0);
  LanceDataset* ds = lance_dataset_open(uri, NULL, v);
  CHECK(ds != NULL);
  LanceSplit* whole = combine_kind(ds, -1);
  const char* texts[] = {"t001 t004", "quick brown fox", "t000"};
  const int kinds[] = {LANCE_TEXT_MATCH_ANY, LANCE_TEXT_MATCH_PHRASE, LANCE_TEXT_MATCH_ANY};
  for (int t = 0; t < 3; t++) {
    LanceTextQuery q;
    fill_query(&q, texts[t], kinds[t], 0, NULL);
    uint8_t* stats = NULL;
    size_t stats_len = 0;
    CHECK_OK(lance_dataset_fts_stats(ds, &q, &stats, &stats_len, NULL));
    struct ArrowArrayStream with, without;
    CHECK_OK(lance_split_fts_search(ds, whole, &q, stats, stats_len, &with));
    CHECK_OK(lance_split_fts_search(ds, whole, &q, NULL, 0, &without));
    Hit a[K], b[K];
    size_t na = read_hits(&with, a, K), nb = read_hits(&without, b, K);
    CHECK(na > 0);
    CHECK_EQ_U64(na, nb);
    for (size_t i = 0; i < na; i++) {
      CHECK_EQ_U64(a[i].rowid, b[i].rowid);
      CHECK(fabsf(a[i].score - b[i].score) <= 1e-5f * fabsf(a[i].score));
    }
    printf("version %llu, query '%s': %zu hits without statistics equal those with them\n",
           (unsigned long long)v, texts[t], na);
    lance_bytes_free(stats, stats_len);
  }
  /* The latest version has an unindexed tail: its segments alone are not the corpus. */
  LanceDataset* latest = lance_dataset_open(uri, NULL, 0);
  CHECK(latest != NULL);
  LanceSplit* segments = combine_kind(latest, LANCE_SPLIT_FTS_SEGMENT);
  CHECK(segments != NULL);
  LanceTextQuery q;
  fill_query(&q, "t001", LANCE_TEXT_MATCH_ANY, 0, NULL);
  struct ArrowArrayStream st;
  CHECK(lance_split_fts_search(latest, segments, &q, NULL, 0, &st) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(strstr(lance_last_error_message(), "not covered") != NULL);
  lance_split_free(segments);
  lance_dataset_free(latest);
  lance_split_free(whole);
  lance_dataset_free(ds);
}

int main(int argc, char** argv) {
  if (argc >= 9 && strcmp(argv[1], "worker") == 0) return worker_main(argv);
  CHECK(argc >= 2);
  Facts facts;
  facts_load(&facts, argv[1]);
  char uri[1024];
  facts_get(&facts, "docs.uri", uri, sizeof uri);
  char dir[] = "/tmp/lance_fts_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  check_query("/proc/self/exe", dir, uri, "t001 t004", LANCE_TEXT_MATCH_ANY, 0, NULL);
  check_query("/proc/self/exe", dir, uri, "t002 t003", LANCE_TEXT_MATCH_ALL, 0, NULL);
  check_query("/proc/self/exe", dir, uri, "quick brown fox", LANCE_TEXT_MATCH_PHRASE, 0, NULL);
  check_query("/proc/self/exe", dir, uri, "t000 quick", LANCE_TEXT_MATCH_ANY, 0, "id % 2 = 0");
  /* The unindexed tail (one fragment) was tokenized once in this process: every other statistics
     pass and flat split of the 4 queries (8 passes in all) read it from the cache. */
  LanceSessionStats ss = {.struct_size = sizeof ss};
  CHECK_OK(lance_session_stats_v2(&ss));
  CHECK_EQ_U64(ss.text_tail_misses, 1);
  CHECK_EQ_U64(ss.text_tail_hits, 7);
  check_whole_corpus(uri);
  /* The files are the test's own; remove them. */
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  printf("distributed_fts: ok\n");
  return 0;
}
