/* Runtime filters from C: a key set handed over as an Arrow array (moved by the call), and a
 * dynamic filter tightened between get_next calls — every batch after the update holds only
 * rows the new predicate keeps, the filter's own column is read and dropped, the handle may
 * be freed while its stream runs, bad updates are refused. argv[1] = the testkit's warehouse. */
#include "test_util.h"

/* An int64 Arrow array of `n` values owned by the array itself (one malloc'd block). */
typedef struct {
  const void* buffers[2];
  int64_t values[];
} I64Block;

static void release_i64(struct ArrowArray* a) {
  free(a->private_data);
  a->release = NULL;
}

static void make_i64(struct ArrowArray* a, const int64_t* values, int64_t n) {
  I64Block* b = malloc(sizeof(I64Block) + sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  CHECK(b != NULL);
  memcpy(b->values, values, sizeof(int64_t) * (size_t)n);
  b->buffers[0] = NULL;
  b->buffers[1] = b->values;
  memset(a, 0, sizeof *a);
  a->length = n;
  a->n_buffers = 2;
  a->buffers = b->buffers;
  a->release = release_i64;
  a->private_data = b;
}

static struct ArrowSchema i64_schema(void) {
  struct ArrowSchema s;
  memset(&s, 0, sizeof s);
  s.format = "l";
  s.name = "";
  s.flags = ARROW_FLAG_NULLABLE;
  return s; /* release stays NULL: the schema is the caller's, never released by the library */
}

/* Rows of the next batch (0 at the end) and the largest id in it; exits on a stream error. */
static int64_t next_batch(struct ArrowArrayStream* st, int64_t* max_id, int id_col) {
  struct ArrowArray arr;
  if (st->get_next(st, &arr) != 0) {
    fprintf(stderr, "get_next failed: %s\n", st->get_last_error(st));
    exit(1);
  }
  if (arr.release == NULL) return 0;
  const struct ArrowArray* c = arr.children[id_col];
  const int64_t* ids = (const int64_t*)c->buffers[1];
  int64_t rows = arr.length;
  for (int64_t i = 0; i < c->length; i++)
    if (ids[c->offset + i] > *max_id) *max_id = ids[c->offset + i];
  arr.release(&arr);
  return rows;
}

int main(int argc, char** argv) {
  CHECK(argc == 2);
  Facts facts;
  facts_load(&facts, argv[1]);
  char uri[4096];
  snprintf(uri, sizeof uri, "%s/people.lance", argv[1]);
  LanceDataset* ds = lance_dataset_open(uri, NULL, 0);
  CHECK(ds != NULL);
  const unsigned long long below_100 = facts_u64(&facts, "people.v3.rows_id_lt_100");
  const char* id_only[] = {"id"};
  LanceScanOptions o;
  long long sum = 0;
  struct ArrowArrayStream st;

  /* A key set as an Arrow array: ids 0..99 keep what "id < 100" keeps; the array is moved. */
  int64_t keys[100];
  for (int i = 0; i < 100; i++) keys[i] = i;
  struct ArrowArray key_array;
  struct ArrowSchema key_schema = i64_schema();
  make_i64(&key_array, keys, 100);
  CHECK_OK(lance_scan_options_init_v2(&o, sizeof o));
  o.columns = id_only;
  o.num_columns = 1;
  o.key_filter_column = "id";
  o.key_filter_values = &key_array;
  o.key_filter_schema = &key_schema;
  CHECK_OK(lance_dataset_scan_v2(ds, &o, &st));
  CHECK(key_array.release == NULL);
  CHECK_EQ_U64(drain_stream(&st, "id", &sum, NULL, NULL), below_100);

  /* A dynamic filter over "id", on a scan that returns only "name": read one batch
   * unfiltered, tighten to "id < 0", and nothing more comes. */
  const char* filter_cols[] = {"id"};
  LanceDynamicFilter* f = NULL;
  CHECK_OK(lance_dynamic_filter_new(ds, filter_cols, 1, &f));
  const char* name_only[] = {"name"};
  CHECK_OK(lance_scan_options_init_v2(&o, sizeof o));
  o.columns = name_only;
  o.num_columns = 1;
  o.batch_size = 16;
  o.dynamic_filter = f;
  CHECK_OK(lance_dataset_scan_v2(ds, &o, &st));
  struct ArrowSchema schema;
  CHECK(st.get_schema(&st, &schema) == 0);
  CHECK(schema.n_children == 1 && strcmp(schema.children[0]->name, "name") == 0);
  schema.release(&schema);
  struct ArrowArray arr;
  CHECK(st.get_next(&st, &arr) == 0 && arr.release != NULL && arr.length == 16);
  arr.release(&arr);
  CHECK_OK(lance_dynamic_filter_set_sql(f, "id < 0"));
  CHECK(st.get_next(&st, &arr) == 0 && arr.release == NULL); /* the end: every later row dropped */
  st.release(&st);

  /* Mid-stream on the projected column, then keys, then the handle freed mid-stream. */
  CHECK_OK(lance_dynamic_filter_set_sql(f, NULL));
  CHECK_OK(lance_scan_options_init_v2(&o, sizeof o));
  o.columns = id_only;
  o.num_columns = 1;
  o.batch_size = 8;
  o.dynamic_filter = f;
  CHECK_OK(lance_dataset_scan_v2(ds, &o, &st));
  int64_t max_id = -1;
  CHECK(next_batch(&st, &max_id, 0) == 8);
  int64_t even[50];
  for (int i = 0; i < 50; i++) even[i] = 2 * i;
  make_i64(&key_array, even, 50);
  CHECK_OK(lance_dynamic_filter_set_keys(f, "id", &key_array, &key_schema));
  CHECK(key_array.release == NULL);
  uint64_t generation = 0;
  CHECK_OK(lance_dynamic_filter_generation(f, &generation));
  CHECK_EQ_U64(generation, 3);
  lance_dynamic_filter_free(f);
  f = NULL;
  struct ArrowArray b;
  uint64_t after = 0;
  for (;;) {
    CHECK(st.get_next(&st, &b) == 0);
    if (b.release == NULL) break;
    const int64_t* ids = (const int64_t*)b.children[0]->buffers[1];
    for (int64_t i = 0; i < b.length; i++) {
      int64_t id = ids[b.children[0]->offset + i];
      CHECK(id % 2 == 0 && id < 100 && id > max_id); /* ordered scan: rows not read yet */
      after++;
    }
    b.release(&b);
  }
  st.release(&st);
  CHECK(after > 0);

  /* Refused: unknown column, SQL naming another column, a limit with a dynamic filter. */
  const char* nope[] = {"nope"};
  CHECK(lance_dynamic_filter_new(ds, nope, 1, &f) == LANCE_ERR_INVALID_ARGUMENT && f == NULL);
  CHECK_OK(lance_dynamic_filter_new(ds, filter_cols, 1, &f));
  CHECK(lance_dynamic_filter_set_sql(f, "name = 'x'") == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(strstr(lance_last_error_message(), "name") != NULL);
  CHECK(lance_dynamic_filter_set_keys(f, "id", NULL, &key_schema) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK_OK(lance_scan_options_init_v2(&o, sizeof o));
  o.limit = 3;
  o.dynamic_filter = f;
  CHECK(lance_dataset_scan_v2(ds, &o, &st) == LANCE_ERR_INVALID_ARGUMENT);
  lance_dynamic_filter_free(f);
  lance_dynamic_filter_free(NULL);

  lance_dataset_free(ds);
  printf("runtime_filters: ok\n");
  return 0;
}
