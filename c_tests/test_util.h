/* Small helpers shared by the C tests: assertions, the FIXTURE facts file, stream reading. */
#ifndef LANCE_HOST_TEST_UTIL_H
#define LANCE_HOST_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lance_host.h"

#define CHECK(cond)                                                                   \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n  last error: [%s] %s\n", __FILE__,    \
              __LINE__, #cond, lance_error_code_name(lance_last_error_code()),        \
              lance_last_error_message());                                            \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

#define CHECK_OK(call) CHECK((call) == LANCE_OK)

#define CHECK_EQ_U64(a, b)                                                            \
  do {                                                                                \
    unsigned long long va_ = (unsigned long long)(a), vb_ = (unsigned long long)(b);  \
    if (va_ != vb_) {                                                                 \
      fprintf(stderr, "%s:%d: %s == %s failed: %llu != %llu\n", __FILE__, __LINE__,   \
              #a, #b, va_, vb_);                                                      \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

/* Facts written by the testkit next to the warehouse (key=value lines). */
typedef struct {
  char text[16384];
} Facts;

static inline void facts_load(Facts* f, const char* warehouse) {
  char path[4096];
  snprintf(path, sizeof path, "%s/FIXTURE", warehouse);
  FILE* fp = fopen(path, "r");
  if (!fp) {
    fprintf(stderr, "cannot open %s (run the warehouse fixture first)\n", path);
    exit(1);
  }
  size_t n = fread(f->text, 1, sizeof f->text - 1, fp);
  f->text[n] = '\0';
  fclose(fp);
}

/* Copy the value of `key` into buf; exits when missing. */
static inline const char* facts_get(const Facts* f, const char* key, char* buf, size_t cap) {
  size_t klen = strlen(key);
  const char* p = f->text;
  while (*p) {
    const char* eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    if (len > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') {
      size_t vlen = len - klen - 1;
      if (vlen >= cap) vlen = cap - 1;
      memcpy(buf, p + klen + 1, vlen);
      buf[vlen] = '\0';
      return buf;
    }
    if (!eol) break;
    p = eol + 1;
  }
  fprintf(stderr, "fact '%s' missing\n", key);
  exit(1);
}

static inline unsigned long long facts_u64(const Facts* f, const char* key) {
  char buf[64];
  return strtoull(facts_get(f, key, buf, sizeof buf), NULL, 10);
}

/* Index of a top-level column in a stream schema, or -1. */
static inline int schema_index(const struct ArrowSchema* s, const char* name) {
  for (int64_t i = 0; i < s->n_children; i++) {
    if (strcmp(s->children[i]->name, name) == 0) return (int)i;
  }
  return -1;
}

/* Read a stream to its end: returns the row count, adds the values of the int64 column
 * `sum_col` (if not NULL) to *sum, and calls `visit` for each value if given. Releases the
 * stream. Exits on stream errors. */
typedef void (*I64Visitor)(int64_t value, void* ctx);

static inline unsigned long long drain_stream(struct ArrowArrayStream* st, const char* sum_col,
                                              long long* sum, I64Visitor visit, void* ctx) {
  struct ArrowSchema schema;
  if (st->get_schema(st, &schema) != 0) {
    fprintf(stderr, "get_schema failed: %s\n", st->get_last_error(st));
    exit(1);
  }
  int col = sum_col ? schema_index(&schema, sum_col) : -1;
  if (sum_col && col < 0) {
    fprintf(stderr, "column %s missing from stream\n", sum_col);
    exit(1);
  }
  if (sum_col && strcmp(schema.children[col]->format, "l") != 0) {
    fprintf(stderr, "column %s is not int64 (format %s)\n", sum_col, schema.children[col]->format);
    exit(1);
  }
  unsigned long long rows = 0;
  for (;;) {
    struct ArrowArray arr;
    if (st->get_next(st, &arr) != 0) {
      fprintf(stderr, "get_next failed: %s\n", st->get_last_error(st));
      exit(1);
    }
    if (arr.release == NULL) break;
    rows += (unsigned long long)arr.length;
    if (col >= 0) {
      const struct ArrowArray* c = arr.children[col];
      const int64_t* values = (const int64_t*)c->buffers[1];
      for (int64_t i = 0; i < c->length; i++) {
        int64_t v = values[c->offset + i];
        if (sum) *sum += v;
        if (visit) visit(v, ctx);
      }
    }
    arr.release(&arr);
  }
  schema.release(&schema);
  st->release(st);
  return rows;
}

/* Copy the one row's fixed-size-list<float> (`dim` values), the first column of a stream that
 * yields exactly one row, into out. Releases the stream. */
static inline void read_single_vector(struct ArrowArrayStream* st, float* out, size_t dim) {
  struct ArrowSchema s;
  if (st->get_schema(st, &s) != 0) {
    fprintf(stderr, "get_schema failed: %s\n", st->get_last_error(st));
    exit(1);
  }
  struct ArrowArray a;
  if (st->get_next(st, &a) != 0 || !a.release || a.length != 1) {
    fprintf(stderr, "expected a batch of one row\n");
    exit(1);
  }
  const struct ArrowArray* list = a.children[0];
  const struct ArrowArray* vals = list->children[0];
  for (size_t j = 0; j < dim; j++)
    out[j] = ((const float*)vals->buffers[1])[vals->offset + list->offset * (int64_t)dim + (int64_t)j];
  a.release(&a);
  s.release(&s);
  st->release(st);
}

#endif
