/* A back end in miniature for the Java tests: executes vector search splits a Java front end
 * planned, then merges them, as a C++ BE of a Doris-like engine does.
 *
 *   split_worker <snapshot token file> <query file: little-endian float32s> <k> <split file>...
 *
 * Opens the snapshot from the token bytes, searches every split (column "vec", every IVF
 * partition probed, columns "id"), merges with lance_topk_merge and prints one line per result:
 * "<id> <distance>". Exit status 0, or 1 with the library's error on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lance_host.h"

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(1);
  }
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static void fail(const char *what) {
  fprintf(stderr, "%s: %s (%s)\n", what, lance_last_error_message(), lance_error_code_name(lance_last_error_code()));
  exit(1);
}

static int child_index(const struct ArrowSchema *s, const char *name) {
  for (int64_t i = 0; i < s->n_children; i++)
    if (strcmp(s->children[i]->name, name) == 0) return (int)i;
  fprintf(stderr, "no column %s in the merged result\n", name);
  exit(1);
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: split_worker <token> <query> <k> <split>...\n");
    return 2;
  }
  size_t token_len, query_len;
  unsigned char *token = slurp(argv[1], &token_len);
  unsigned char *query = slurp(argv[2], &query_len);
  uint64_t k = strtoull(argv[3], NULL, 10);
  LanceDataset *ds = lance_snapshot_open(token, token_len, NULL);
  if (!ds) fail("lance_snapshot_open");

  int n = argc - 4;
  struct ArrowArrayStream *parts = calloc((size_t)n, sizeof *parts);
  for (int i = 0; i < n; i++) {
    size_t len;
    unsigned char *bytes = slurp(argv[4 + i], &len);
    LanceSplit *split = lance_split_deserialize(bytes, len);
    free(bytes);
    if (!split) fail("lance_split_deserialize");
    LanceVectorQuery q;
    lance_vector_query_init_v2(&q, sizeof q);
    const char *cols[] = {"id"};
    q.column = "vec";
    q.vector = query;
    q.dimension = query_len / sizeof(float);
    q.element_type = LANCE_ELEMENT_F32;
    q.k = k;
    q.nprobes = 1000; /* every partition: the exact answer */
    q.columns = cols;
    q.num_columns = 1;
    q.with_row_id = true;
    if (lance_split_search_v2(ds, split, &q, &parts[i]) != LANCE_OK) fail("lance_split_search_v2");
    lance_split_free(split);
  }
  struct ArrowArrayStream merged;
  if (lance_topk_merge(parts, (size_t)n, k, 0, &merged) != LANCE_OK) fail("lance_topk_merge");

  struct ArrowSchema schema;
  if (merged.get_schema(&merged, &schema) != 0) {
    fprintf(stderr, "get_schema: %s\n", merged.get_last_error(&merged));
    return 1;
  }
  int id_col = child_index(&schema, "id"), dist_col = child_index(&schema, "_distance");
  if (strcmp(schema.children[id_col]->format, "l") != 0 || strcmp(schema.children[dist_col]->format, "f") != 0) {
    fprintf(stderr, "unexpected types %s %s\n", schema.children[id_col]->format, schema.children[dist_col]->format);
    return 1;
  }
  for (;;) {
    struct ArrowArray batch;
    int rc = merged.get_next(&merged, &batch);
    if (rc != 0) {
      fprintf(stderr, "get_next: %s\n", merged.get_last_error(&merged));
      return 1;
    }
    if (!batch.release) break;
    const struct ArrowArray *ids = batch.children[id_col], *dist = batch.children[dist_col];
    const int64_t *iv = (const int64_t *)ids->buffers[1];
    const float *dv = (const float *)dist->buffers[1];
    for (int64_t r = 0; r < batch.length; r++) {
      printf("%lld %.9g\n", (long long)iv[ids->offset + batch.offset + r], (double)dv[dist->offset + batch.offset + r]);
    }
    batch.release(&batch);
  }
  schema.release(&schema);
  merged.release(&merged);
  free(parts);
  lance_dataset_free(ds);
  free(token);
  free(query);
  return 0;
}
