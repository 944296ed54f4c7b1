/* lance-host demo: walks a local warehouse the way an engine's connector would.
 * argv[1] = warehouse directory (written by lance-host-testkit). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lance_host.h"

static void die(const char* what) {
  fprintf(stderr, "demo: %s failed: [%s] %s\n", what,
          lance_error_code_name(lance_last_error_code()), lance_last_error_message());
  exit(1);
}

static const char* type_name(const char* format) {
  if (strcmp(format, "l") == 0) return "int64";
  if (strcmp(format, "u") == 0) return "utf8";
  if (strcmp(format, "g") == 0) return "float64";
  if (strcmp(format, "f") == 0) return "float32";
  if (strncmp(format, "+w:", 3) == 0) return "fixed_size_list";
  if (strncmp(format, "tsm", 3) == 0) return "timestamp[ms]";
  return format;
}

/* Print one cell of a primitive/utf8 column. */
static void print_cell(const struct ArrowSchema* s, const struct ArrowArray* a, int64_t row) {
  int64_t i = a->offset + row;
  const uint8_t* validity = (const uint8_t*)a->buffers[0];
  if (validity && !(validity[i / 8] & (1 << (i % 8)))) {
    printf("%-14s", "null");
    return;
  }
  if (strcmp(s->format, "l") == 0) {
    printf("%-14" PRId64, ((const int64_t*)a->buffers[1])[i]);
  } else if (strcmp(s->format, "L") == 0) {
    printf("%-14" PRIu64, ((const uint64_t*)a->buffers[1])[i]);
  } else if (strcmp(s->format, "g") == 0) {
    printf("%-14.1f", ((const double*)a->buffers[1])[i]);
  } else if (strcmp(s->format, "u") == 0) {
    const int32_t* off = (const int32_t*)a->buffers[1];
    const char* data = (const char*)a->buffers[2];
    printf("%-14.*s", (int)(off[i + 1] - off[i]), data + off[i]);
  } else {
    printf("%-14s", "...");
  }
}

/* Print up to `max_rows` rows of a stream (all columns), return the total row count. */
static uint64_t print_stream(struct ArrowArrayStream* st, int max_rows) {
  struct ArrowSchema schema;
  if (st->get_schema(st, &schema) != 0) die("get_schema");
  printf("    ");
  for (int64_t c = 0; c < schema.n_children; c++) printf("%-14s", schema.children[c]->name);
  printf("\n");
  uint64_t total = 0;
  int printed = 0;
  for (;;) {
    struct ArrowArray batch;
    if (st->get_next(st, &batch) != 0) {
      fprintf(stderr, "stream error: %s\n", st->get_last_error(st));
      exit(1);
    }
    if (!batch.release) break;
    for (int64_t r = 0; r < batch.length && printed < max_rows; r++, printed++) {
      printf("    ");
      for (int64_t c = 0; c < schema.n_children; c++)
        print_cell(schema.children[c], batch.children[c], r);
      printf("\n");
    }
    total += (uint64_t)batch.length;
    batch.release(&batch);
  }
  if (total > (uint64_t)printed) printf("    ... (%" PRIu64 " rows in total)\n", total);
  schema.release(&schema);
  st->release(st);
  return total;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <warehouse-dir>\n", argv[0]);
    return 2;
  }
  char uri[4096];
  snprintf(uri, sizeof uri, "%s/people.lance", argv[1]);
  printf("lance-host %s demo\n\n", lance_host_version());

  /* 0. Discover what the warehouse holds through catalogs (SHOW DATABASES / SHOW TABLES). */
  const char* plain_props[] = {"type", "dir", "root", argv[1], NULL};
  LanceCatalog* plain = lance_catalog_open(plain_props);
  if (!plain) die("lance_catalog_open");
  LanceStringList* tables = NULL;
  if (lance_catalog_list_tables(plain, NULL, 0, &tables) != LANCE_OK) die("list_tables");
  printf("0. catalog over %s (directory layout)\n   tables:", argv[1]);
  for (size_t i = 0; i < lance_string_list_count(tables); i++)
    printf(" %s", lance_string_list_get(tables, i));
  printf("\n");
  lance_string_list_free(tables);

  char nested[4096];
  snprintf(nested, sizeof nested, "%s/nested", argv[1]);
  const char* nested_props[] = {"root", nested, NULL};
  LanceCatalog* cat = lance_catalog_open(nested_props);
  if (!cat) die("lance_catalog_open (nested)");
  LanceNamespaceList* nss = NULL;
  if (lance_catalog_list_namespaces(cat, NULL, 0, true, &nss) != LANCE_OK) die("list_namespaces");
  printf("   catalog over %s (manifest layout, nested namespaces):\n", nested);
  for (size_t i = 0; i < lance_namespace_list_count(nss); i++) {
    const char* parts[8];
    size_t depth = lance_namespace_list_depth(nss, i);
    if (depth > 8) depth = 8;
    printf("   - ");
    for (size_t j = 0; j < depth; j++) {
      parts[j] = lance_namespace_list_part(nss, i, j);
      printf("%s%s", j ? "$" : "", parts[j]);
    }
    LanceStringList* t = NULL;
    if (lance_catalog_list_tables(cat, parts, depth, &t) != LANCE_OK) die("list_tables (nested)");
    printf(" :");
    for (size_t k = 0; k < lance_string_list_count(t); k++) printf(" %s", lance_string_list_get(t, k));
    printf("\n");
    lance_string_list_free(t);
  }
  lance_namespace_list_free(nss);
  LanceTableInfo* info = NULL;
  if (lance_catalog_describe_table(plain, NULL, 0, "people", &info) != LANCE_OK) die("describe");
  printf("   describe people: %s (latest version %" PRIu64 ")\n\n", lance_table_info_location(info),
         lance_table_info_latest_version(info));
  lance_table_info_free(info);
  lance_catalog_free(cat);

  /* 1. A coordinator opens the table once (through the catalog) and pins its version. */
  LanceDataset* ds = lance_catalog_open_table(plain, NULL, 0, "people", 0);
  if (!ds) die("lance_catalog_open_table");
  lance_catalog_free(plain);
  uint64_t rows = 0;
  if (lance_dataset_count_rows(ds, &rows) != LANCE_OK) die("count_rows");
  printf("1. opened %s\n   pinned version %" PRIu64 ", %" PRIu64 " visible rows, storage format %s\n\n",
         lance_dataset_uri(ds), lance_dataset_version(ds), rows, lance_dataset_storage_format(ds));

  /* 2. Version history. */
  LanceVersionInfo* versions = NULL;
  size_t nversions = 0;
  if (lance_dataset_versions(ds, &versions, &nversions) != LANCE_OK) die("versions");
  printf("2. version history\n");
  for (size_t i = 0; i < nversions; i++)
    printf("   version %" PRIu64 " committed at %" PRId64 " ms\n", versions[i].version,
           versions[i].timestamp_ms);
  lance_version_info_list_free(versions, nversions);

  /* 3. Schema through the Arrow C Data Interface. */
  struct ArrowSchema schema;
  if (lance_dataset_schema(ds, &schema) != LANCE_OK) die("schema");
  printf("\n3. schema\n");
  for (int64_t i = 0; i < schema.n_children; i++)
    printf("   %-10s %s\n", schema.children[i]->name, type_name(schema.children[i]->format));
  schema.release(&schema);

  /* 4. Fragments: the unit of scan splits. */
  LanceFragmentInfo* frags = NULL;
  size_t nfrags = 0;
  if (lance_dataset_fragments(ds, &frags, &nfrags) != LANCE_OK) die("fragments");
  printf("\n4. fragments\n");
  for (size_t i = 0; i < nfrags; i++)
    printf("   fragment %" PRIu64 ": %" PRIu64 " rows (%" PRIu64 " physical, %" PRIu64
           " deleted), %u data file(s)\n",
           frags[i].id, frags[i].logical_rows, frags[i].physical_rows, frags[i].deleted_rows,
           frags[i].data_file_count);

  /* 5. Scan one fragment, projected, with row ids. */
  LanceScanOptions o;
  lance_scan_options_init_v2(&o, sizeof(LanceScanOptions));
  const char* cols[] = {"id", "name", "category", "score"};
  o.columns = cols;
  o.num_columns = 4;
  o.fragment_ids = &frags[nfrags - 1].id;
  o.num_fragment_ids = 1;
  o.with_row_id = true;
  struct ArrowArrayStream st;
  if (lance_dataset_scan_v2(ds, &o, &st) != LANCE_OK) die("scan");
  printf("\n5. scan of fragment %" PRIu64 " (projection + _rowid)\n", frags[nfrags - 1].id);
  print_stream(&st, 5);
  lance_fragment_info_list_free(frags, nfrags);

  /* 6. Filtered scan with limit. */
  lance_scan_options_init_v2(&o, sizeof(LanceScanOptions));
  o.columns = cols;
  o.num_columns = 4;
  o.filter_sql = "category = 'gamma' AND score > 90";
  if (lance_dataset_scan_v2(ds, &o, &st) != LANCE_OK) die("filtered scan");
  printf("\n6. filtered scan: %s\n", o.filter_sql);
  print_stream(&st, 8);

  /* 7. An older version: time travel is just another pinned handle. */
  LanceDataset* v1 = lance_dataset_open(uri, NULL, 1);
  if (!v1) die("open version 1");
  uint64_t v1_rows = 0;
  lance_dataset_count_rows(v1, &v1_rows);
  lance_scan_options_init_v2(&o, sizeof(LanceScanOptions));
  o.columns = cols;
  o.num_columns = 2;
  o.filter_sql = "id % 10 = 0";
  o.limit = 3;
  if (lance_dataset_scan_v2(v1, &o, &st) != LANCE_OK) die("scan version 1");
  printf("\n7. version 1 has %" PRIu64 " rows; rows deleted later are still there:\n", v1_rows);
  print_stream(&st, 3);
  lance_dataset_free(v1);

  /* 8. Errors come back as codes with messages. */
  const char* bad[] = {"no_such_column"};
  lance_scan_options_init_v2(&o, sizeof(LanceScanOptions));
  o.columns = bad;
  o.num_columns = 1;
  int rc = lance_dataset_scan_v2(ds, &o, &st);
  printf("\n8. bad input -> %s: %s\n", lance_error_code_name(rc), lance_last_error_message());

  /* 9. Vector search the way a distributed engine runs it. */
  char vuri[4096];
  snprintf(vuri, sizeof vuri, "%s/vectors.lance", argv[1]);
  LanceDataset* vds = lance_dataset_open(vuri, NULL, 0);
  if (!vds) die("open vectors");
  LanceIndexList* idx = NULL;
  if (lance_dataset_indexes(vds, &idx) != LANCE_OK) die("indexes");
  printf("\n9. vector indexes of %s (version %" PRIu64 ")\n", vuri, lance_dataset_version(vds));
  for (size_t i = 0; i < lance_index_list_count(idx); i++)
    printf("   %-9s on %-15s %-12s %-7s %zu segment(s)\n", lance_index_list_name(idx, i),
           lance_index_list_column(idx, i), lance_index_list_type(idx, i),
           lance_index_list_metric(idx, i), lance_index_list_segment_count(idx, i));
  lance_index_list_free(idx);

  if (lance_dataset_prewarm_index(vds, "emb_pq") != LANCE_OK) die("prewarm");
  LanceSessionStats warm = {.struct_size = sizeof(LanceSessionStats)};
  lance_session_stats_v2(&warm);
  printf("   prewarmed emb_pq: index cache now holds %" PRIu64 " entries (%" PRIu64 " bytes)\n",
         warm.index_entries, warm.index_bytes);

  LanceSplitPlan* plan = NULL;
  if (lance_dataset_plan_vector_search(vds, "embedding", LANCE_METRIC_L2, true, 0, &plan) != LANCE_OK)
    die("plan");
  size_t nsplits = lance_split_plan_count(plan);
  printf("   plan: %s\n", lance_split_plan_reason(plan));
  float query[16];
  for (int i = 0; i < 16; i++) query[i] = (i >= 1 && i <= 4) ? 3.0f : 0.0f;
  struct ArrowArrayStream results[32];
  for (size_t i = 0; i < nsplits && i < 32; i++) {
    LanceSplit* split = lance_split_plan_get(plan, i);
    uint8_t* bytes = NULL;
    size_t len = 0;
    lance_split_serialize(split, &bytes, &len); /* what a coordinator ships to a worker */
    LanceSplit* shipped = lance_split_deserialize(bytes, len);
    size_t nf = 0;
    const uint64_t* f = lance_split_fragment_ids(shipped, &nf);
    printf("   split %zu: %-13s fragments", i,
           lance_split_kind(shipped) == LANCE_SPLIT_INDEX_SEGMENT ? "INDEX_SEGMENT" : "FLAT");
    for (size_t j = 0; j < nf; j++) printf(" %" PRIu64, f[j]);
    printf(" (%" PRIu64 " rows, %zu bytes on the wire)\n", lance_split_row_count(shipped), len);
    LanceDataset* worker = lance_split_open_dataset(shipped, NULL);
    LanceVectorQuery q;
    lance_vector_query_init_v2(&q, sizeof(LanceVectorQuery));
    const char* qcols[] = {"id"};
    q.column = "embedding";
    q.vector = query;
    q.dimension = 16;
    q.k = 5;
    q.columns = qcols;
    q.num_columns = 1;
    if (lance_split_search_v2(worker, shipped, &q, &results[i]) != LANCE_OK) die("split search");
    lance_dataset_free(worker);
    lance_split_free(shipped);
    lance_bytes_free(bytes, len);
    lance_split_free(split);
  }
  lance_split_plan_free(plan);
  struct ArrowArrayStream merged;
  if (lance_topk_merge(results, nsplits, 5, 0, &merged) != LANCE_OK) die("merge");
  printf("   global top-5 merged from %zu splits:\n", nsplits);
  struct ArrowSchema ms;
  merged.get_schema(&merged, &ms);
  struct ArrowArray mb;
  merged.get_next(&merged, &mb);
  uint64_t winners[5];
  int rowid_col = -1;
  for (int64_t c = 0; c < ms.n_children; c++)
    if (strcmp(ms.children[c]->name, "_rowid") == 0) rowid_col = (int)c;
  for (int64_t r = 0; r < mb.length && r < 5; r++)
    winners[r] = ((const uint64_t*)mb.children[rowid_col]->buffers[1])[mb.children[rowid_col]->offset + r];
  int64_t nwin = mb.length;
  mb.release(&mb);
  ms.release(&ms);
  merged.release(&merged);
  const char* tcols[] = {"_rowid", "id", "category"};
  if (lance_dataset_take_rows(vds, winners, (size_t)nwin, tcols, 3, &st) != LANCE_OK) die("take");
  printf("   late materialization (take by _rowid):\n");
  print_stream(&st, 5);
  lance_dataset_free(vds);

  LanceSessionStats stats = {.struct_size = sizeof(LanceSessionStats)};
  lance_session_stats_v2(&stats);
  printf("\nsession: metadata cache %" PRIu64 " hits / %" PRIu64 " misses, %" PRIu64
         " entries; index cache %" PRIu64 " hits / %" PRIu64 " misses\n",
         stats.metadata_hits, stats.metadata_misses, stats.metadata_entries, stats.index_hits,
         stats.index_misses);
  lance_dataset_free(ds);
  return 0;
}
