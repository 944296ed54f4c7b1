/* lance_host DuckDB extension: lance_blob_read. */
#include "lance_duckdb.h"

/* ---- lance_blob_read(uri, column, row_id, offset, length) -> BLOB ------------------------- */

int row_valid(duckdb_vector v, idx_t row) {
  uint64_t* validity = duckdb_vector_get_validity(v);
  return duckdb_validity_row_is_valid(validity, row);
}

/* A VARCHAR input value as a NUL-terminated copy (caller frees). */
char* string_at(duckdb_vector v, idx_t row) {
  duckdb_string_t* strings = (duckdb_string_t*)duckdb_vector_get_data(v);
  uint32_t len = duckdb_string_t_length(strings[row]);
  char* out = (char*)malloc((size_t)len + 1);
  memcpy(out, duckdb_string_t_data(&strings[row]), len);
  out[len] = '\0';
  return out;
}

void set_null(duckdb_vector out, idx_t row) {
  duckdb_vector_ensure_validity_writable(out);
  duckdb_validity_set_row_invalid(duckdb_vector_get_validity(out), row);
}

/* The tables one DuckDB thread's lance_blob_read opened during a query (the function's state,
   destroyed when the query ends): each table is opened once and its version read for the rest
   of the query. At most BLOB_TABLES are kept; the oldest is closed to make room. */

void blob_tables_destroy(void* p) {
  BlobTables* t = (BlobTables*)p;
  for (int i = 0; i < t->n; i++) {
    lance_dataset_free(t->ds[i]);
    free(t->uri[i]);
  }
  free(t);
}

void blob_read_init(duckdb_init_info info) {
  BlobTables* t = (BlobTables*)calloc(1, sizeof *t);
  if (!t) {
    duckdb_scalar_function_init_set_error(info, "lance_blob_read: out of memory");
    return;
  }
  duckdb_scalar_function_init_set_state(info, t, blob_tables_destroy);
}

/* The open table of `uri`: from the thread's state, else opened (and kept there when there is
   a state). NULL with the library's error set when it cannot be opened. `*owned` says whether
   the caller frees it (no state). */
LanceDataset* blob_table(BlobTables* t, const char* uri, int* owned) {
  *owned = 0;
  if (t) {
    for (int i = 0; i < t->n; i++) {
      if (strcmp(t->uri[i], uri) == 0) return t->ds[i];
    }
  }
  LanceDataset* ds = lance_dataset_open(uri, NULL, 0);
  if (!ds) return NULL;
  char* key = t ? (char*)malloc(strlen(uri) + 1) : NULL;
  if (key) memcpy(key, uri, strlen(uri) + 1);
  if (!t || !key) {
    *owned = 1;
    return ds;
  }
  if (t->n == BLOB_TABLES) {
    lance_dataset_free(t->ds[0]);
    free(t->uri[0]);
    memmove(&t->ds[0], &t->ds[1], (BLOB_TABLES - 1) * sizeof t->ds[0]);
    memmove(&t->uri[0], &t->uri[1], (BLOB_TABLES - 1) * sizeof t->uri[0]);
    t->n--;
  }
  t->uri[t->n] = key;
  t->ds[t->n] = ds;
  t->n++;
  return ds;
}

/* Rows with the same uri and column form a run: one descriptor take for the run, then one
   range read per row. */
void blob_read_function(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
  BlobTables* tables = (BlobTables*)duckdb_scalar_function_get_state(info);
  idx_t n = duckdb_data_chunk_get_size(input);
  duckdb_vector in[5];
  for (idx_t c = 0; c < 5; c++) in[c] = duckdb_data_chunk_get_vector(input, c);
  const uint64_t* row_ids = (const uint64_t*)duckdb_vector_get_data(in[2]);
  const int64_t* offsets = (const int64_t*)duckdb_vector_get_data(in[3]);
  const int64_t* lengths = (const int64_t*)duckdb_vector_get_data(in[4]);
  char msg[4096];
  idx_t i = 0;
  while (i < n) {
    int all_valid = 1;
    for (idx_t c = 0; c < 5; c++) all_valid &= row_valid(in[c], i);
    if (!all_valid) {
      set_null(output, i++);
      continue;
    }
    char* uri = string_at(in[0], i);
    char* column = string_at(in[1], i);
    /* The run: following rows with all arguments set and the same uri and column. */
    idx_t end = i + 1;
    while (end < n) {
      int ok = 1;
      for (idx_t c = 0; c < 5; c++) ok &= row_valid(in[c], end);
      if (!ok) break;
      char* u = string_at(in[0], end);
      char* col = string_at(in[1], end);
      ok = strcmp(u, uri) == 0 && strcmp(col, column) == 0;
      free(u);
      free(col);
      if (!ok) break;
      end++;
    }
    int owned = 0;
    LanceDataset* ds = blob_table(tables, uri, &owned);
    LanceBlobs* blobs = NULL;
    int failed = 0;
    if (!ds) {
      snprintf(msg, sizeof msg, "lance_blob_read: cannot open %s: %s", uri, lance_last_error_message());
      failed = 1;
    } else if (lance_dataset_take_blobs(ds, column, row_ids + i, end - i, &blobs) != LANCE_OK) {
      snprintf(msg, sizeof msg, "lance_blob_read: %s", lance_last_error_message());
      failed = 1;
    }
    for (idx_t r = i; r < end && !failed; r++) {
      LanceBlobInfo inf;
      memset(&inf, 0, sizeof inf);
      inf.struct_size = sizeof inf;
      if (offsets[r] < 0 || lengths[r] < 0) {
        snprintf(msg, sizeof msg, "lance_blob_read: offset and length must not be negative (row id %llu)",
                 (unsigned long long)row_ids[r]);
        failed = 1;
      } else if (lance_blobs_info(blobs, r - i, &inf) != LANCE_OK) {
        snprintf(msg, sizeof msg, "lance_blob_read: %s", lance_last_error_message());
        failed = 1;
      } else if (inf.is_null) {
        set_null(output, r);
      } else {
        uint8_t* bytes = NULL;
        size_t len = 0;
        if (lance_blobs_read_alloc(blobs, r - i, (uint64_t)offsets[r], (uint64_t)lengths[r], &bytes, &len) !=
            LANCE_OK) {
          snprintf(msg, sizeof msg, "lance_blob_read: %s", lance_last_error_message());
          failed = 1;
        } else {
          duckdb_vector_assign_string_element_len(output, r, (const char*)bytes, len);
          lance_bytes_free(bytes, len);
        }
      }
    }
    lance_blobs_free(blobs);
    if (owned) lance_dataset_free(ds);
    free(uri);
    free(column);
    if (failed) {
      duckdb_scalar_function_set_error(info, msg);
      return;
    }
    i = end;
  }
}

int register_blob_function(duckdb_connection con) {
  duckdb_scalar_function f = duckdb_create_scalar_function();
  duckdb_scalar_function_set_name(f, "lance_blob_read");
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  duckdb_logical_type ubigint = duckdb_create_logical_type(DUCKDB_TYPE_UBIGINT);
  duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
  duckdb_logical_type blob = duckdb_create_logical_type(DUCKDB_TYPE_BLOB);
  duckdb_scalar_function_add_parameter(f, varchar); /* uri */
  duckdb_scalar_function_add_parameter(f, varchar); /* column */
  duckdb_scalar_function_add_parameter(f, ubigint); /* row id */
  duckdb_scalar_function_add_parameter(f, bigint);  /* offset */
  duckdb_scalar_function_add_parameter(f, bigint);  /* length */
  duckdb_scalar_function_set_return_type(f, blob);
  duckdb_scalar_function_set_function(f, blob_read_function);
  duckdb_scalar_function_set_init(f, blob_read_init);
  duckdb_state st = duckdb_register_scalar_function(con, f);
  duckdb_destroy_logical_type(&varchar);
  duckdb_destroy_logical_type(&ubigint);
  duckdb_destroy_logical_type(&bigint);
  duckdb_destroy_logical_type(&blob);
  duckdb_destroy_scalar_function(&f);
  return st == DuckDBSuccess;
}

