/* End-to-end read path from C: open -> pin -> schema -> fragments -> scans -> older version,
 * plus bad inputs. argv[1] = warehouse directory written by the testkit. */
#include "test_util.h"

static LanceDataset* open_table(const char* root, const char* table, uint64_t version) {
  char uri[4096];
  snprintf(uri, sizeof uri, "%s/%s.lance", root, table);
  LanceDataset* ds = lance_dataset_open(uri, NULL, version);
  CHECK(ds != NULL);
  return ds;
}

static unsigned long long scan_sum(const LanceDataset* ds, const LanceScanOptions* o,
                                   long long* sum) {
  struct ArrowArrayStream st;
  CHECK_OK(lance_dataset_scan_v2(ds, o, &st));
  *sum = 0;
  return drain_stream(&st, "id", sum, NULL, NULL);
}

int main(int argc, char** argv) {
  CHECK(argc == 2);
  const char* root = argv[1];
  Facts facts;
  facts_load(&facts, root);

  LanceDataset* ds = open_table(root, "people", 0);
  CHECK_EQ_U64(lance_dataset_version(ds), facts_u64(&facts, "people.versions"));
  CHECK(strstr(lance_dataset_uri(ds), "people.lance") != NULL);
  CHECK(lance_dataset_storage_format(ds)[0] >= '2');

  uint64_t rows = 0;
  CHECK_OK(lance_dataset_count_rows(ds, &rows));
  CHECK_EQ_U64(rows, facts_u64(&facts, "people.v3.rows"));

  struct ArrowSchema schema;
  CHECK_OK(lance_dataset_schema(ds, &schema));
  CHECK(schema_index(&schema, "id") == 0);
  CHECK(schema_index(&schema, "embedding") >= 0);
  CHECK(strcmp(schema.children[0]->format, "l") == 0);
  schema.release(&schema);

  LanceFragmentInfo* frags = NULL;
  size_t nfrags = 0;
  CHECK_OK(lance_dataset_fragments(ds, &frags, &nfrags));
  CHECK_EQ_U64(nfrags, facts_u64(&facts, "people.fragments"));
  uint64_t logical = 0, deleted = 0;
  for (size_t i = 0; i < nfrags; i++) {
    logical += frags[i].logical_rows;
    deleted += frags[i].deleted_rows;
  }
  CHECK_EQ_U64(logical, rows);
  CHECK(deleted > 0);
  lance_fragment_info_list_free(frags, nfrags);

  /* Full scan. */
  LanceScanOptions o;
  CHECK_OK(lance_scan_options_init_v2(&o, sizeof(LanceScanOptions)));
  long long sum = 0;
  CHECK_EQ_U64(scan_sum(ds, &o, &sum), rows);
  CHECK_EQ_U64(sum, facts_u64(&facts, "people.v3.sum_id"));

  /* Filtered + projected scan. */
  const char* cols[] = {"id", "name"};
  o.columns = cols;
  o.num_columns = 2;
  o.filter_sql = "id < 100";
  CHECK_EQ_U64(scan_sum(ds, &o, &sum), facts_u64(&facts, "people.v3.rows_id_lt_100"));

  /* Limit. */
  CHECK_OK(lance_scan_options_init_v2(&o, sizeof(LanceScanOptions)));
  o.limit = 5;
  CHECK_EQ_U64(scan_sum(ds, &o, &sum), 5);

  /* Unknown column. */
  const char* bad_cols[] = {"id", "nope_col"};
  CHECK_OK(lance_scan_options_init_v2(&o, sizeof(LanceScanOptions)));
  o.columns = bad_cols;
  o.num_columns = 2;
  struct ArrowArrayStream st;
  CHECK(lance_dataset_scan_v2(ds, &o, &st) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(strstr(lance_last_error_message(), "nope_col") != NULL);

  /* Latest version does not move the handle. */
  uint64_t latest = 0;
  CHECK_OK(lance_dataset_latest_version(ds, &latest));
  CHECK_EQ_U64(latest, lance_dataset_version(ds));
  lance_dataset_free(ds);

  /* Older version. */
  LanceDataset* v1 = open_table(root, "people", 1);
  CHECK_OK(lance_scan_options_init_v2(&o, sizeof(LanceScanOptions)));
  CHECK_EQ_U64(scan_sum(v1, &o, &sum), facts_u64(&facts, "people.v1.rows"));
  CHECK_EQ_U64(sum, facts_u64(&facts, "people.v1.sum_id"));
  lance_dataset_free(v1);

  /* Bad inputs. */
  CHECK(lance_dataset_open(NULL, NULL, 0) == NULL);
  CHECK(lance_last_error_code() == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(lance_dataset_open("/definitely/not/here.lance", NULL, 0) == NULL);
  CHECK(lance_last_error_code() == LANCE_ERR_NOT_FOUND);
  const char bad_utf8[] = {'x', (char)0xff, 0};
  CHECK(lance_dataset_open(bad_utf8, NULL, 0) == NULL);
  CHECK(lance_last_error_code() == LANCE_ERR_INVALID_ARGUMENT);
  LanceDataset* missing_version = open_table(root, "people", 0);
  char uri[4096];
  snprintf(uri, sizeof uri, "%s", lance_dataset_uri(missing_version));
  lance_dataset_free(missing_version);
  CHECK(lance_dataset_open(uri, NULL, 12345) == NULL);
  CHECK(lance_last_error_code() == LANCE_ERR_NOT_FOUND);
  lance_dataset_free(NULL);

  printf("scan_test: ok (%llu rows)\n", (unsigned long long)rows);
  return 0;
}
