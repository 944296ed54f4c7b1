/* Catalog from C: open a directory catalog over the nested (manifest layout) warehouse, list
 * namespaces and tables, describe, open pinned, scan; then DDL in a new directory catalog:
 * create a namespace, CREATE TABLE AS a scan, drop the table and the namespace.
 * argv[1] = warehouse directory. */
#include <stdlib.h>

#include "test_util.h"

int main(int argc, char** argv) {
  CHECK(argc == 2);
  Facts facts;
  facts_load(&facts, argv[1]);
  char root[4096];
  facts_get(&facts, "nested.root", root, sizeof root);

  const char* props[] = {"type", "dir", "root", root, NULL};
  LanceCatalog* cat = lance_catalog_open(props);
  CHECK(cat != NULL);

  /* Top-level namespaces, recursively. */
  LanceNamespaceList* nss = NULL;
  CHECK_OK(lance_catalog_list_namespaces(cat, NULL, 0, true, &nss));
  size_t n = lance_namespace_list_count(nss);
  CHECK(n >= 4);
  int found_analytics = 0;
  for (size_t i = 0; i < n; i++) {
    if (lance_namespace_list_depth(nss, i) == 2 &&
        strcmp(lance_namespace_list_part(nss, i, 0), "prod") == 0 &&
        strcmp(lance_namespace_list_part(nss, i, 1), "analytics") == 0)
      found_analytics = 1;
  }
  CHECK(found_analytics);
  CHECK(lance_namespace_list_part(nss, n, 0) == NULL); /* out of range: error, no crash */
  CHECK(lance_last_error_code() == LANCE_ERR_INVALID_ARGUMENT);
  lance_namespace_list_free(nss);

  /* Tables of prod$analytics. */
  const char* ns[] = {"prod", "analytics"};
  LanceStringList* tables = NULL;
  CHECK_OK(lance_catalog_list_tables(cat, ns, 2, &tables));
  CHECK_EQ_U64(lance_string_list_count(tables), 1);
  CHECK(strcmp(lance_string_list_get(tables, 0), "clicks") == 0);
  lance_string_list_free(tables);

  /* Describe, then open with what describe returned. */
  LanceTableInfo* info = NULL;
  CHECK_OK(lance_catalog_describe_table(cat, ns, 2, "clicks", &info));
  CHECK(lance_table_info_latest_version(info) >= 1);
  LanceDataset* direct =
      lance_dataset_open(lance_table_info_location(info), lance_table_info_storage_options(info), 0);
  CHECK(direct != NULL);
  lance_table_info_free(info);

  /* Open through the catalog and scan. */
  LanceDataset* ds = lance_catalog_open_table(cat, ns, 2, "clicks", 0);
  CHECK(ds != NULL);
  CHECK_EQ_U64(lance_dataset_version(ds), lance_dataset_version(direct));
  LanceScanOptions o;
  CHECK_OK(lance_scan_options_init_v2(&o, sizeof(LanceScanOptions)));
  struct ArrowArrayStream st;
  CHECK_OK(lance_dataset_scan_v2(ds, &o, &st));
  long long sum = 0;
  unsigned long long rows = drain_stream(&st, "event_id", &sum, NULL, NULL);
  CHECK_EQ_U64(rows, facts_u64(&facts, "nested.prod$analytics$clicks.rows"));
  CHECK_EQ_U64(sum, rows * (rows - 1) / 2);

  /* Missing table: NOT_FOUND naming it. */
  CHECK(lance_catalog_open_table(cat, ns, 2, "no_such_table", 0) == NULL);
  CHECK(lance_last_error_code() == LANCE_ERR_NOT_FOUND);
  CHECK(strstr(lance_last_error_message(), "no_such_table") != NULL);
  /* Bad property: INVALID_ARGUMENT naming it. */
  const char* bad[] = {"root", "relative/dir", NULL};
  CHECK(lance_catalog_open(bad) == NULL);
  CHECK(lance_last_error_code() == LANCE_ERR_INVALID_ARGUMENT);
  CHECK(strstr(lance_last_error_message(), "root") != NULL);

  /* DDL in a catalog of its own: CREATE SCHEMA, CREATE TABLE AS SELECT, DROP. */
  char dir[] = "/tmp/lance_host_catalog_ddl_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  const char* ddl_props[] = {"type", "dir", "root", dir, NULL};
  LanceCatalog* ddl = lance_catalog_open(ddl_props);
  CHECK(ddl != NULL);
  const char* sales[] = {"sales"};
  CHECK_OK(lance_catalog_create_namespace(ddl, sales, 1, false, NULL));
  CHECK(lance_catalog_create_namespace(ddl, sales, 1, false, NULL) == LANCE_ERR_INVALID_ARGUMENT);
  CHECK_OK(lance_catalog_create_namespace(ddl, sales, 1, true, NULL));
  CHECK_OK(lance_dataset_scan_v2(ds, &o, &st));
  LanceDataset* copy = NULL;
  LanceWriteResult wr = {.struct_size = sizeof wr};
  CHECK_OK(lance_catalog_create_table(ddl, sales, 1, "clicks_copy", &st, NULL, &copy, &wr));
  CHECK(st.release == NULL && wr.version == 1 && wr.rows_written == rows);
  uint64_t copied = 0;
  CHECK_OK(lance_dataset_count_rows(copy, &copied));
  CHECK_EQ_U64(copied, rows);
  LanceStringList* names = NULL;
  CHECK_OK(lance_catalog_list_tables(ddl, sales, 1, &names));
  CHECK(lance_string_list_count(names) == 1 && strcmp(lance_string_list_get(names, 0), "clicks_copy") == 0);
  lance_string_list_free(names);
  CHECK(lance_catalog_drop_namespace(ddl, sales, 1, false, false) == LANCE_ERR_INVALID_ARGUMENT); /* not empty */
  CHECK_OK(lance_catalog_drop_table(ddl, sales, 1, "clicks_copy", false));
  CHECK(lance_catalog_drop_table(ddl, sales, 1, "clicks_copy", false) == LANCE_ERR_NOT_FOUND);
  CHECK_OK(lance_catalog_drop_namespace(ddl, sales, 1, false, false));
  CHECK(lance_catalog_drop_namespace(ddl, sales, 1, false, false) == LANCE_ERR_NOT_FOUND);
  CHECK_OK(lance_catalog_drop_namespace(ddl, sales, 1, false, true));
  lance_dataset_free(copy);
  lance_catalog_free(ddl);

  lance_dataset_free(ds);
  lance_dataset_free(direct);
  lance_catalog_free(cat);
  printf("catalog_test: ok (%llu rows)\n", rows);
  return 0;
}
