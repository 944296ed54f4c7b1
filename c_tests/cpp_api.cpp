// The C++17 API (lance_host.hpp) as an engine would use it: catalog -> pinned dataset ->
// scan plan -> split scans -> vector plan -> split searches -> merge -> take, with RAII and
// exceptions; compiled with -Wall -Wextra -Werror.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "lance_host.hpp"

#define EXPECT(cond)                                                        \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "%s:%d: EXPECT failed: %s\n", __FILE__, __LINE__, #cond); \
      std::exit(1);                                                         \
    }                                                                       \
  } while (0)

static std::string fact(const std::string& warehouse, const std::string& key) {
  std::ifstream f(warehouse + "/FIXTURE");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
  std::fprintf(stderr, "fact %s missing\n", key.c_str());
  std::exit(1);
}

int main(int argc, char** argv) {
  EXPECT(argc == 2);
  const std::string warehouse = argv[1];
  namespace lh = lance_host;
  EXPECT(lh::library_is_compatible());
  EXPECT(lh::library_version() == LANCE_HOST_VERSION);
  try {
    // Session settings before first use: a smaller data cache with 32 KiB blocks; a bad block
    // size is an Error with the library's code.
    lh::SessionOptions bad;
    bad.data_cache(1u << 20, 12345);
    try {
      bad.configure();
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.code() == LANCE_ERR_INVALID_ARGUMENT);
    }
    lh::SessionOptions opts;
    opts.data_cache(64u << 20, 32u << 10);
    opts.configure();
    LanceSessionStats st = lh::session_stats();
    EXPECT(st.data_cache_memory_capacity == (64u << 20));
    EXPECT(st.data_cache_disk_enabled == 0);
    lh::flush_data_cache();  // no disk tier: returns at once

    // Catalog -> a pinned dataset.
    auto catalog = lh::Catalog::open({{"root", warehouse}});
    auto tables = catalog.list_tables();
    bool found = false;
    for (const auto& t : tables) found |= t == "vectors";
    EXPECT(found);
    lh::Dataset ds = catalog.open_table("vectors");
    const uint64_t rows = std::stoull(fact(warehouse, "vectors.rows"));
    EXPECT(ds.count_rows() == rows);

    // Scan plan -> every split scanned on a worker-side handle rebuilt from bytes.
    auto plan = ds.plan_scan();
    uint64_t scanned = 0;
    for (size_t i = 0; i < plan.size(); i++) {
      auto shipped = lh::Split::deserialize(plan.at(i).serialize());
      for (auto& batch : ds.scan(shipped)) scanned += static_cast<uint64_t>(batch.num_rows());
    }
    EXPECT(scanned == rows);

    // The query: row 777's vector.
    lh::ScanRequest r;
    r.columns = {"embedding"};
    r.filter = "id = 777";
    std::vector<float> query;
    for (auto& batch : ds.scan(r)) {
      const ArrowArray* list = batch.array().children[0];
      const ArrowArray* values = list->children[0];
      const int64_t dim = values->length / list->length;
      const float* v = static_cast<const float*>(values->buffers[1]) + values->offset + list->offset * dim;
      query.assign(v, v + dim);
    }
    EXPECT(query.size() == std::stoull(fact(warehouse, "vectors.dim")));

    // Vector plan -> split searches -> merge -> take the winners.
    auto vplan = ds.plan_vector_search("embedding", LANCE_METRIC_L2);
    EXPECT(vplan.index_name().has_value());
    std::vector<lh::Stream> results;
    lh::SearchRequest q;
    q.column = "embedding";
    q.vector = query;
    q.k = 5;
    q.nprobes = 4;
    for (size_t i = 0; i < vplan.size(); i++) results.push_back(ds.search(vplan.at(i), q));
    auto merged = lh::merge(std::move(results), 5);
    std::vector<uint64_t> row_ids;
    for (auto& batch : merged) {
      int64_t c = batch.column_index("_rowid");
      EXPECT(c >= 0);
      const uint64_t* ids = batch.values<uint64_t>(c);
      row_ids.insert(row_ids.end(), ids, ids + batch.num_rows());
    }
    EXPECT(row_ids.size() == 5);
    std::vector<int64_t> ids;
    for (auto& batch : ds.take(row_ids, {"id"})) {
      const int64_t* v = batch.values<int64_t>(0);
      ids.insert(ids.end(), v, v + batch.num_rows());
    }
    EXPECT(ids.size() == 5 && ids[0] == 777);

    // Full-text search: plan, statistics once, split searches, merge by score; every hit's
    // text (taken by _rowid) holds the query term.
    auto docs = lh::Dataset::open(fact(warehouse, "docs.uri"));
    auto fplan = docs.plan_fts("text");
    EXPECT(fplan.size() >= 3 && fplan.index_name() == std::optional<std::string>("text_idx"));
    lh::TextSearchRequest tq;
    tq.column = "text";
    tq.text = "t001";
    tq.k = 8;
    tq.columns = {"id"};
    auto stats = docs.fts_stats(tq);
    std::vector<lh::Stream> hits;
    for (size_t i = 0; i < fplan.size(); i++) hits.push_back(docs.fts_search(fplan.at(i), tq, stats));
    std::vector<uint64_t> hit_ids;
    float last = 1e30f;
    for (auto& batch : lh::merge_fts(std::move(hits), 8)) {
      const float* sc = batch.values<float>(batch.column_index("_score"));
      const uint64_t* r = batch.values<uint64_t>(batch.column_index("_rowid"));
      for (int64_t i = 0; i < batch.num_rows(); i++) {
        EXPECT(sc[i] <= last && sc[i] > 0);
        last = sc[i];
        hit_ids.push_back(r[i]);
      }
    }
    EXPECT(hit_ids.size() == 8);
    size_t with_term = 0;
    for (auto& batch : docs.take(hit_ids, {"text"})) {
      const ArrowArray* col = batch.array().children[0];
      const int32_t* off = static_cast<const int32_t*>(col->buffers[1]);
      const char* data = static_cast<const char*>(col->buffers[2]);
      for (int64_t i = 0; i < batch.num_rows(); i++) {
        std::string text(data + off[col->offset + i], off[col->offset + i + 1] - off[col->offset + i]);
        with_term += (" " + text + " ").find(" t001 ") != std::string::npos;
      }
    }
    EXPECT(with_term == 8);
    try {
      lh::TextSearchRequest empty = tq;
      empty.text = "";
      docs.fts_stats(empty);
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.code() == LANCE_ERR_INVALID_ARGUMENT);
    }

    // Errors are exceptions with the library's code and message.
    try {
      lh::Dataset::open(warehouse + "/no_such_table.lance");
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.code() == LANCE_ERR_NOT_FOUND);
      EXPECT(std::strstr(e.what(), "no_such_table") != nullptr);
    }
    try {
      lh::ScanRequest bad;
      bad.columns = {"nope"};
      ds.scan(bad);
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.code() == LANCE_ERR_INVALID_ARGUMENT);
    }
    // A cancelled stream throws ECANCELED from next().
    auto s = ds.scan();
    s.cancel();
    try {
      s.next();
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.code() == ECANCELED);
    }
    std::printf("cpp_api: ok (%llu rows, nearest id %lld)\n", static_cast<unsigned long long>(rows),
                static_cast<long long>(ids[0]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    return 1;
  }
  return 0;
}
