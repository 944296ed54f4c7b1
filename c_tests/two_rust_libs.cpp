// A C++ host that links liblance_host.a next to another Rust static library (its own Rust
// component, with its own copy of the Rust standard library): both work in one process.
// argv[1] = warehouse directory.
#include <cstring>
#include <string>

extern "C" {
#include "test_util.h"
int64_t neighbor_sum(const int64_t* values, size_t len);
bool neighbor_describe(uint64_t n, char* buf, size_t cap);
}

int main(int argc, char** argv) {
  CHECK(argc == 2);
  Facts facts;
  facts_load(&facts, argv[1]);
  char uri[4096];
  facts_get(&facts, "people.uri", uri, sizeof uri);

  // The neighbour: thread, allocation, formatting, a caught panic.
  const int64_t values[] = {1, 2, 3, 4};
  CHECK(neighbor_sum(values, 4) == 10);
  char buf[64];
  CHECK(neighbor_describe(7, buf, sizeof buf));
  CHECK(std::string(buf) == "neighbor:7");

  // lance-host in the same process: a full scan, checked against the fixture's facts.
  LanceDataset* ds = lance_dataset_open(uri, nullptr, 0);
  CHECK(ds != nullptr);
  ArrowArrayStream st;
  CHECK_OK(lance_dataset_scan_v2(ds, nullptr, &st));
  long long sum = 0;
  unsigned long long rows = drain_stream(&st, "id", &sum, nullptr, nullptr);
  CHECK_EQ_U64(rows, facts_u64(&facts, "people.v3.rows"));
  // A caught panic in lance-host's boundary and an error path still work.
  CHECK(lance_dataset_open("/no/such/table", nullptr, 0) == nullptr);
  CHECK(lance_last_error_code() == LANCE_ERR_NOT_FOUND);
  lance_dataset_free(ds);

  // And the neighbour again, after lance-host's runtime started its threads.
  CHECK(neighbor_sum(values, 2) == 3);
  std::printf("two_rust_libs: ok (%llu rows, neighbour %s)\n", rows, buf);
  return 0;
}
