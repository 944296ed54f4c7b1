// A C++ engine's connector in miniature, on lance_host.hpp alone: open a table through a catalog,
// pin a snapshot, plan scan splits and ship them (as bytes, with a snapshot token) to "workers",
// search vectors per split and merge, take the winners, full-text search with shipped corpus
// statistics, prewarm, count and explain. Build: find_package(LanceHost) (examples/CMakeLists.txt).
//
//   walkthrough <warehouse directory> [name=value ...]
//     vectors=<table> (default vectors)   vector=<column> (embedding)   key=<int64 column> (id)
//     docs=<table> (docs; "" skips full-text search)   text=<column> (text)
//     query=<phrase> (quick brown fox)   filter=<Lance SQL> (<key> < 100)
//     index=<vector index to prewarm> (default: the first index on the vector column)
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "lance_host.hpp"

namespace lh = lance_host;

int main(int argc, char** argv) {
  std::map<std::string, std::string> arg{{"vectors", "vectors"}, {"vector", "embedding"}, {"key", "id"},
                                         {"docs", "docs"},       {"text", "text"},        {"query", "quick brown fox"},
                                         {"index", ""}};
  bool usage = argc < 2;
  for (int i = 2; i < argc && !usage; i++) {
    const std::string a = argv[i];
    const size_t eq = a.find('=');
    if (eq == std::string::npos) {
      usage = true;
      break;
    }
    arg[a.substr(0, eq)] = a.substr(eq + 1);
  }
  if (usage) {
    std::fprintf(stderr, "usage: %s <warehouse directory> [name=value ...] (names: see the source's header)\n", argv[0]);
    return 2;
  }
  const std::string vectors = arg["vectors"], docs = arg["docs"], key = arg["key"], column = arg["vector"];
  const std::string filter = arg.count("filter") ? arg["filter"] : key + " < 100";
  try {
    if (!lh::library_is_compatible()) throw std::runtime_error("liblance_host is older than this header");

    // 1. Catalog -> a table pinned at its latest version.
    auto catalog = lh::Catalog::open({{"root", argv[1]}});
    lh::Dataset ds = catalog.open_table(vectors);
    std::printf("%s at version %llu: %llu rows\n", vectors.c_str(), (unsigned long long)ds.version(),
                (unsigned long long)ds.count_rows());

    // 2. The coordinator plans scan splits and exports a snapshot token; each worker opens the
    //    token (no manifest read) and scans the splits it is given.
    std::vector<uint8_t> token = ds.export_snapshot();
    lh::SplitPlan plan = ds.plan_scan();
    uint64_t scanned = 0;
    for (size_t i = 0; i < plan.size(); i++) {
      std::vector<uint8_t> shipped = plan.at(i).serialize();  // over the wire
      lh::Dataset worker = lh::Dataset::open_snapshot(token);
      lh::Split split = lh::Split::deserialize(shipped);
      lh::ScanRequest only_key;  // a worker projects what it needs
      only_key.columns = {key};
      for (auto& batch : worker.scan(split, only_key)) scanned += static_cast<uint64_t>(batch.num_rows());
    }
    std::printf("scanned %llu rows in %zu splits\n", (unsigned long long)scanned, plan.size());

    // 3. Vector search: one split per index segment plus flat splits, merged into the top 5.
    std::vector<float> query;
    lh::ScanRequest one;
    one.columns = {column};
    one.limit = 1;
    for (auto& batch : ds.scan(one)) {
      const ArrowArray* list = batch.array().children[0];
      const ArrowArray* values = list->children[0];
      const float* v = static_cast<const float*>(values->buffers[1]) + values->offset;
      query.assign(v, v + values->length / list->length);
    }
    lh::SearchRequest q;
    q.column = column;
    q.vector = query;
    q.k = 5;
    q.nprobes = 8;
    q.refine_factor = 5;  // IVF_PQ: re-rank 25 candidates per segment for recall
    q.columns = {key};
    auto vplan = ds.plan_vector_search(column);
    std::vector<lh::Stream> parts;
    for (size_t i = 0; i < vplan.size(); i++) parts.push_back(ds.search(vplan.at(i), q));
    std::vector<uint64_t> winners;
    for (auto& batch : lh::merge(std::move(parts), q.k)) {
      const uint64_t* r = batch.values<uint64_t>("_rowid");
      const float* d = batch.values<float>("_distance");
      for (int64_t i = 0; i < batch.num_rows(); i++) {
        winners.push_back(r[i]);
        std::printf("  neighbour row %llu at distance %.4f\n", (unsigned long long)r[i], d[i]);
      }
    }
    for (auto& batch : ds.take(winners, {key}))
      std::printf("took %lld rows; first %s %lld\n", (long long)batch.num_rows(), key.c_str(),
                  (long long)batch.values<int64_t>(key)[0]);

    // 4. Full-text search: corpus statistics once, shipped with every split; merged by _score.
    if (!docs.empty()) {
      lh::Dataset text = catalog.open_table(docs);
      lh::TextSearchRequest t;
      t.column = arg["text"];
      t.text = arg["query"];
      t.match = LANCE_TEXT_MATCH_PHRASE;
      t.columns = {key};
      std::vector<uint8_t> stats = text.fts_stats(t);
      auto fplan = text.plan_fts(t.column);
      std::vector<lh::Stream> hits;
      for (size_t i = 0; i < fplan.size(); i++) hits.push_back(text.fts_search(fplan.at(i), t, stats));
      for (auto& batch : lh::merge_fts(std::move(hits), 3))
        for (int64_t i = 0; i < batch.num_rows(); i++)
          std::printf("  '%s' in %s %lld, score %.3f\n", t.text.c_str(), key.c_str(),
                      (long long)batch.values<int64_t>(key)[i], batch.values<float>("_score")[i]);
    }

    // 5. Prewarm the vector index, count with a filter, explain a scan.
    std::string index = arg["index"];
    for (const auto& i : ds.indexes())
      if (index.empty() && i.column == column && i.metric) index = i.name;
    if (!index.empty()) {
      LanceIoStats io = ds.prewarm_index_with_stats(index);
      std::printf("prewarm of %s read %llu index bytes\n", index.c_str(), (unsigned long long)io.index_read_bytes);
    }
    auto [n, count_io] = ds.count_rows_with_io(filter);
    std::printf("%llu rows match %s (%llu index-cache hits)\n", (unsigned long long)n, filter.c_str(),
                (unsigned long long)count_io.index_cache_hits);
    std::printf("%s", ds.explain_scan().c_str());
  } catch (const lh::Error& e) {
    std::fprintf(stderr, "%s error %s: %s\n", e.library_code() ? "library" : "stream", e.name().c_str(), e.what());
    return 1;
  }
  return 0;
}
