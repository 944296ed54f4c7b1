// A C++ engine's connector in miniature, on lance_host.hpp alone: open a table through a catalog,
// pin a snapshot, plan scan splits and ship them (as bytes, with a snapshot token) to "workers",
// search vectors per split and merge, take the winners, full-text search with shipped corpus
// statistics, prewarm, count and explain. Build: find_package(LanceHost) (examples/CMakeLists.txt).
//
//   walkthrough <warehouse directory> [vector table] [text table]
#include <cstdio>
#include <string>
#include <vector>

#include "lance_host.hpp"

namespace lh = lance_host;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <warehouse directory> [vector table] [text table]\n", argv[0]);
    return 2;
  }
  const std::string vectors = argc > 2 ? argv[2] : "vectors";
  const std::string docs = argc > 3 ? argv[3] : "docs";
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
      for (auto& batch : worker.scan(split)) scanned += static_cast<uint64_t>(batch.num_rows());
    }
    std::printf("scanned %llu rows in %zu splits\n", (unsigned long long)scanned, plan.size());

    // 3. Vector search: one split per index segment plus flat splits, merged into the top 5.
    std::vector<float> query;
    lh::ScanRequest one;
    one.columns = {"embedding"};
    one.limit = 1;
    for (auto& batch : ds.scan(one)) {
      const ArrowArray* list = batch.array().children[0];
      const ArrowArray* values = list->children[0];
      const float* v = static_cast<const float*>(values->buffers[1]) + values->offset;
      query.assign(v, v + values->length / list->length);
    }
    lh::SearchRequest q;
    q.column = "embedding";
    q.vector = query;
    q.k = 5;
    q.nprobes = 8;
    q.refine_factor = 5;  // IVF_PQ: re-rank 25 candidates per segment for recall
    q.columns = {"id"};
    auto vplan = ds.plan_vector_search("embedding");
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
    for (auto& batch : ds.take(winners, {"id"}))
      std::printf("took %lld rows; first id %lld\n", (long long)batch.num_rows(), (long long)batch.values<int64_t>("id")[0]);

    // 4. Full-text search: corpus statistics once, shipped with every split; merged by _score.
    lh::Dataset text = catalog.open_table(docs);
    lh::TextSearchRequest t;
    t.column = "text";
    t.text = "quick brown fox";
    t.match = LANCE_TEXT_MATCH_PHRASE;
    t.columns = {"id"};
    std::vector<uint8_t> stats = text.fts_stats(t);
    auto fplan = text.plan_fts("text");
    std::vector<lh::Stream> hits;
    for (size_t i = 0; i < fplan.size(); i++) hits.push_back(text.fts_search(fplan.at(i), t, stats));
    for (auto& batch : lh::merge_fts(std::move(hits), 3))
      for (int64_t i = 0; i < batch.num_rows(); i++)
        std::printf("  '%s' in id %lld, score %.3f\n", t.text.c_str(), (long long)batch.values<int64_t>("id")[i],
                    batch.values<float>("_score")[i]);

    // 5. Prewarm an index, count with a filter, explain a scan.
    LanceIoStats io = ds.prewarm_index_with_stats("emb_pq");
    auto [n, count_io] = ds.count_rows_with_io(std::string("id < 100"));
    std::printf("prewarm read %llu index bytes; %llu rows have id < 100 (%llu index-cache hits)\n",
                (unsigned long long)io.index_read_bytes, (unsigned long long)n,
                (unsigned long long)count_io.index_cache_hits);
    std::printf("%s", ds.explain_scan().c_str());
  } catch (const lh::Error& e) {
    std::fprintf(stderr, "%s error %d: %s\n", e.library_code() ? "library" : "stream", e.code(), e.what());
    return 1;
  }
  return 0;
}
