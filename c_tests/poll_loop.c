/* A host with its own scheduler: one thread, one event loop, many streams read through
 * lance_stream_poll_next. A stream that answers PENDING is parked until its wake callback
 * writes its number into a pipe the loop waits on with poll(2); nothing blocks in get_next.
 * The loop runs the scan splits of `people` and the vector-search splits of `vectors` at the
 * same time, and each stream's rows must equal the same stream read with the blocking
 * get_next. Then: cancellation and a deadline wake a parked stream, a failed stream keeps its
 * error, polling after the end is refused, and bad arguments are rejected.
 * argv[1] = warehouse directory. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "test_util.h"

#define MAX_STREAMS 64
#define MAX_ROWS 8192

typedef struct {
  struct ArrowArrayStream st;
  int col; /* index of the int64/uint64 column collected */
  bool runnable, done;
  size_t n;
  int64_t values[MAX_ROWS];
  unsigned pendings, wakes;
} Polled;

static int wake_pipe[2];

/* The wake callback: runs on a library thread; only writes the stream's number. */
static void on_wake(void* user_data) {
  unsigned char id = (unsigned char)(uintptr_t)user_data;
  ssize_t w = write(wake_pipe[1], &id, 1);
  (void)w;
}

static int column_of(struct ArrowArrayStream* st, const char* name) {
  struct ArrowSchema s;
  CHECK(st->get_schema(st, &s) == 0);
  int c = schema_index(&s, name);
  CHECK(c >= 0);
  s.release(&s);
  return c;
}

static void collect(Polled* p, const struct ArrowArray* a) {
  const struct ArrowArray* c = a->children[p->col];
  for (int64_t i = 0; i < a->length; i++) {
    CHECK(p->n < MAX_ROWS);
    p->values[p->n++] = ((const int64_t*)c->buffers[1])[c->offset + i];
  }
}

/* Run every stream to its end on this thread. Returns the number of PENDING answers. */
static unsigned run_loop(Polled* ps, size_t count) {
  size_t left = count;
  unsigned pendings = 0;
  for (size_t i = 0; i < count; i++) ps[i].runnable = true;
  while (left > 0) {
    bool progressed = false;
    for (size_t i = 0; i < count; i++) {
      Polled* p = &ps[i];
      if (p->done || !p->runnable) continue;
      struct ArrowArray a;
      int32_t status = -1;
      CHECK_OK(lance_stream_poll_next(&p->st, &a, on_wake, (void*)(uintptr_t)i, &status));
      progressed = true;
      if (status == LANCE_POLL_READY) {
        CHECK(a.release != NULL);
        collect(p, &a);
        a.release(&a);
      } else if (status == LANCE_POLL_PENDING) {
        p->runnable = false;
        p->pendings++;
        pendings++;
      } else {
        CHECK(status == LANCE_POLL_END);
        /* Polling past the end is a caller error, not a second end. */
        CHECK(lance_stream_poll_next(&p->st, &a, on_wake, NULL, &status) ==
              LANCE_ERR_FAILED_PRECONDITION);
        p->st.release(&p->st);
        p->done = true;
        left--;
      }
    }
    if (left == 0 || progressed) continue;
    /* Everything is parked: sleep until a wake-up. A lost wake-up fails instead of hanging. */
    struct pollfd pfd = {.fd = wake_pipe[0], .events = POLLIN};
    int r = poll(&pfd, 1, 60000);
    CHECK(r == 1);
    unsigned char ids[64];
    ssize_t got = read(wake_pipe[0], ids, sizeof ids);
    CHECK(got > 0);
    for (ssize_t j = 0; j < got; j++) {
      CHECK(ids[j] < count);
      ps[ids[j]].runnable = true;
      ps[ids[j]].wakes++;
    }
  }
  return pendings;
}

/* The same stream's column read with the blocking get_next. */
static size_t blocking_read(struct ArrowArrayStream* st, const char* name, int64_t* out) {
  int c = column_of(st, name);
  size_t n = 0;
  for (;;) {
    struct ArrowArray a;
    CHECK(st->get_next(st, &a) == 0);
    if (!a.release) break;
    const struct ArrowArray* col = a.children[c];
    for (int64_t i = 0; i < a.length; i++) {
      CHECK(n < MAX_ROWS);
      out[n++] = ((const int64_t*)col->buffers[1])[col->offset + i];
    }
    a.release(&a);
  }
  st->release(st);
  return n;
}

static LanceDataset* open_uri(const char* uri) {
  LanceDataset* ds = lance_dataset_open(uri, NULL, 0);
  CHECK(ds != NULL);
  return ds;
}

static void scan_split(const LanceDataset* ds, const LanceSplit* split, struct ArrowArrayStream* st) {
  LanceScanOptions o;
  CHECK_OK(lance_scan_options_init_v2(&o, sizeof o));
  const char* cols[] = {"id"};
  o.columns = cols;
  o.num_columns = 1;
  o.batch_size = 16; /* many batches: the loop interleaves the streams */
  CHECK_OK(lance_split_scan_v2(ds, split, &o, st));
}

static void search_split(const LanceDataset* ds, const LanceSplit* split, const float* q, size_t dim,
                         struct ArrowArrayStream* st) {
  LanceVectorQuery vq;
  CHECK_OK(lance_vector_query_init_v2(&vq, sizeof vq));
  const char* cols[] = {"id"};
  vq.column = "embedding";
  vq.vector = q;
  vq.dimension = dim;
  vq.element_type = LANCE_ELEMENT_F32;
  vq.k = 10;
  vq.nprobes = 4;
  vq.columns = cols;
  vq.num_columns = 1;
  CHECK_OK(lance_split_search_v2(ds, split, &vq, st));
}

/* No wake-up is waiting in the pipe: every callback followed a PENDING answer and was
   consumed (a callback for a poll that answered READY, END or an error would show here). */
static void check_no_stray_wake(void) {
  struct pollfd pfd = {.fd = wake_pipe[0], .events = POLLIN};
  CHECK(poll(&pfd, 1, 50) == 0);
}

static void wait_for_wake(unsigned char expected) {
  struct pollfd pfd = {.fd = wake_pipe[0], .events = POLLIN};
  CHECK(poll(&pfd, 1, 60000) == 1);
  unsigned char id = 0xff;
  CHECK(read(wake_pipe[0], &id, 1) == 1);
  CHECK(id == expected);
}

/* Poll a fresh scan until it parks; returns false if it ended without ever parking. */
static bool poll_until_pending(struct ArrowArrayStream* st, unsigned char id) {
  for (;;) {
    struct ArrowArray a;
    int32_t status = -1;
    CHECK_OK(lance_stream_poll_next(st, &a, on_wake, (void*)(uintptr_t)id, &status));
    if (status == LANCE_POLL_PENDING) return true;
    if (status == LANCE_POLL_END) return false;
    a.release(&a);
  }
}

int main(int argc, char** argv) {
  CHECK(argc == 2);
  Facts facts;
  facts_load(&facts, argv[1]);
  CHECK(pipe(wake_pipe) == 0);
  CHECK(fcntl(wake_pipe[0], F_SETFL, O_NONBLOCK) == 0);

  char uri[4096];
  LanceDataset* people = open_uri(facts_get(&facts, "people.uri", uri, sizeof uri));
  LanceDataset* vectors = open_uri(facts_get(&facts, "vectors.uri", uri, sizeof uri));
  size_t dim = (size_t)facts_u64(&facts, "vectors.dim");

  LanceSplitPlan* scan_plan = NULL;
  CHECK_OK(lance_dataset_plan_scan(people, 0, &scan_plan));
  LanceSplitPlan* search_plan = NULL;
  CHECK_OK(lance_dataset_plan_vector_search(vectors, "embedding", LANCE_METRIC_L2, true, 0, &search_plan));
  size_t nscan = lance_split_plan_count(scan_plan), nsearch = lance_split_plan_count(search_plan);
  CHECK(nscan >= 2 && nsearch >= 2 && nscan + nsearch <= MAX_STREAMS);

  float q[256];
  CHECK(dim <= 256);
  for (size_t j = 0; j < dim; j++) q[j] = (float)((j * 7) % 5) * 0.25f;

  static Polled ps[MAX_STREAMS];
  size_t count = 0;
  for (size_t i = 0; i < nscan; i++) {
    LanceSplit* s = lance_split_plan_get(scan_plan, i);
    scan_split(people, s, &ps[count].st);
    ps[count].col = column_of(&ps[count].st, "id");
    count++;
    lance_split_free(s);
  }
  for (size_t i = 0; i < nsearch; i++) {
    LanceSplit* s = lance_split_plan_get(search_plan, i);
    search_split(vectors, s, q, dim, &ps[count].st);
    ps[count].col = column_of(&ps[count].st, "id");
    count++;
    lance_split_free(s);
  }
  unsigned pendings = run_loop(ps, count);
  check_no_stray_wake();

  /* Each stream equals the same stream read blocking, row for row. */
  static int64_t expect[MAX_ROWS];
  long long sum = 0;
  unsigned long long rows = 0;
  for (size_t i = 0; i < count; i++) {
    struct ArrowArrayStream st;
    LanceSplit* s = i < nscan ? lance_split_plan_get(scan_plan, i) : lance_split_plan_get(search_plan, i - nscan);
    if (i < nscan) scan_split(people, s, &st);
    else search_split(vectors, s, q, dim, &st);
    lance_split_free(s);
    size_t n = blocking_read(&st, "id", expect);
    CHECK_EQ_U64(ps[i].n, n);
    if (i < nscan) { /* a scan split's order is its fragments' order */
      for (size_t r = 0; r < n; r++) CHECK(ps[i].values[r] == expect[r]);
      for (size_t r = 0; r < n; r++) sum += ps[i].values[r];
      rows += n;
    } else { /* search results: the same rows (ties may order differently) */
      CHECK(n > 0);
      long long a = 0, b = 0;
      for (size_t r = 0; r < n; r++) a += ps[i].values[r], b += expect[r];
      CHECK(a == b);
    }
  }
  CHECK_EQ_U64(rows, facts_u64(&facts, "people.v3.rows"));
  CHECK_EQ_U64((unsigned long long)sum, facts_u64(&facts, "people.v3.sum_id"));

  /* Cancellation of a stream that has not ended: its next poll and every later one is
   * CANCELLED, and a parked one is woken. One poll only: the split's rows come in batches of
   * 16, so one poll cannot end the stream (polling until it parks could drain a stream whose
   * rows were decoded at once before it ever parked). */
  struct ArrowArrayStream st;
  LanceSplit* first = lance_split_plan_get(scan_plan, 0);
  scan_split(people, first, &st);
  struct ArrowArray a;
  int32_t status = -1;
  CHECK_OK(lance_stream_poll_next(&st, &a, on_wake, (void*)(uintptr_t)7, &status));
  bool parked = status == LANCE_POLL_PENDING;
  CHECK(status != LANCE_POLL_END);
  if (status == LANCE_POLL_READY) a.release(&a);
  CHECK_OK(lance_stream_cancel(&st));
  if (parked) wait_for_wake(7);
  check_no_stray_wake();
  CHECK(lance_stream_poll_next(&st, &a, on_wake, NULL, &status) == LANCE_ERR_CANCELLED);
  CHECK(strstr(lance_last_error_message(), "cancel") != NULL);
  CHECK(lance_stream_poll_next(&st, &a, on_wake, NULL, &status) == LANCE_ERR_CANCELLED);
  CHECK(strstr(st.get_last_error(&st), "LANCE_ERR_CANCELLED") != NULL);
  st.release(&st);

  /* A stream created under a call context observes its deadline: once it has passed, the
   * next poll is TIMEOUT. (That a deadline or a cancellation alone wakes a parked stream is
   * tested in Rust on a stream that never produces anything.) */
  LanceCallContext* ctx = lance_call_context_new(200);
  CHECK(ctx != NULL);
  CHECK_OK(lance_call_context_enter(ctx));
  scan_split(people, first, &st);
  CHECK_OK(lance_call_context_enter(NULL));
  usleep(250000);
  CHECK(lance_stream_poll_next(&st, &a, on_wake, (void*)(uintptr_t)9, &status) == LANCE_ERR_TIMEOUT);
  st.release(&st);
  lance_call_context_free(ctx);

  /* A released stream never calls its callback afterwards: park, release, then nothing
   * arrives in the pipe. */
  scan_split(people, first, &st);
  if (poll_until_pending(&st, 11)) {
    st.release(&st);
    struct pollfd pfd = {.fd = wake_pipe[0], .events = POLLIN};
    CHECK(poll(&pfd, 1, 300) == 0);
  } else {
    st.release(&st);
  }
  lance_split_free(first);

  /* Bad arguments. */
  CHECK(lance_stream_poll_next(NULL, &a, NULL, NULL, &status) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(lance_stream_poll_next(&st, &a, NULL, NULL, &status) == LANCE_ERR_INVALID_ARGUMENT); /* released */
  CHECK(strstr(lance_last_error_message(), "released") != NULL);
  LanceSplit* again = lance_split_plan_get(scan_plan, 0);
  scan_split(people, again, &st);
  CHECK(lance_stream_poll_next(&st, NULL, NULL, NULL, &status) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(lance_stream_poll_next(&st, &a, NULL, NULL, NULL) == LANCE_ERR_INVALID_ARGUMENT);
  /* A NULL callback is allowed: the host polls on its own schedule. */
  size_t n = 0;
  for (;;) {
    CHECK_OK(lance_stream_poll_next(&st, &a, NULL, NULL, &status));
    if (status == LANCE_POLL_END) break;
    if (status == LANCE_POLL_READY) {
      n += (size_t)a.length;
      a.release(&a);
    } else {
      usleep(1000);
    }
  }
  CHECK_EQ_U64(n, ps[0].n);
  st.release(&st);
  lance_split_free(again);

  lance_split_plan_free(scan_plan);
  lance_split_plan_free(search_plan);
  lance_dataset_free(people);
  lance_dataset_free(vectors);
  close(wake_pipe[0]);
  close(wake_pipe[1]);
  printf("poll_loop: ok (%zu streams, %u pending answers, all woken)\n", count, pendings);
  return 0;
}
