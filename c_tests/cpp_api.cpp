// The C++17 API (lance_host.hpp) as an engine would use it: catalog -> pinned dataset ->
// scan plan -> split scans -> vector plan -> split searches -> merge -> take, with RAII and
// exceptions; compiled with -Wall -Wextra -Werror.
#include <algorithm>
#include <functional>
#include <cmath>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "lance_host.hpp"

#define EXPECT(cond)                                                        \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "%s:%d: EXPECT failed: %s\n", __FILE__, __LINE__, #cond); \
      std::exit(1);                                                         \
    }                                                                       \
  } while (0)

// Protobuf wire format, enough to write a small Substrait plan by hand.
static std::string pb_varint(uint64_t v) {
  std::string out;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    out.push_back(static_cast<char>(v ? (b | 0x80) : b));
  } while (v);
  return out;
}
static std::string pb_bytes(int field, const std::string& body) {
  return pb_varint(static_cast<uint64_t>(field) << 3 | 2) + pb_varint(body.size()) + body;
}
static std::string pb_uint(int field, uint64_t v) { return pb_varint(static_cast<uint64_t>(field) << 3) + pb_varint(v); }

// SELECT count(*) AS n FROM t: Plan{extensions: [count as anchor 1], relations: [PlanRel{root:
// RelRoot{input: Rel{aggregate: AggregateRel{input: Rel{read: ReadRel{base_schema: (id i64),
// named_table: t}}, measures: [count()]}}, names: [n]}}]} (field numbers of substrait's protos).
static std::vector<uint8_t> count_star_plan() {
  std::string i64_type = pb_bytes(7, "");
  std::string base = pb_bytes(1, "id") + pb_bytes(2, pb_bytes(1, i64_type));
  std::string read = pb_bytes(2, base) + pb_bytes(7, pb_bytes(1, "t"));
  std::string measure = pb_bytes(1, pb_uint(1, 1));
  std::string aggregate = pb_bytes(2, pb_bytes(1, read)) + pb_bytes(4, measure);
  std::string root = pb_bytes(1, pb_bytes(4, aggregate)) + pb_bytes(2, "n");
  std::string declaration = pb_bytes(3, pb_uint(2, 1) + pb_bytes(3, "count"));
  std::string plan = pb_bytes(2, declaration) + pb_bytes(3, pb_bytes(2, root));
  return std::vector<uint8_t>(plan.begin(), plan.end());
}

static std::string fact(const std::string& warehouse, const std::string& key) {
  std::ifstream f(warehouse + "/FIXTURE");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
  std::fprintf(stderr, "fact %s missing\n", key.c_str());
  std::exit(1);
}

// ---- host batches handed to the writers (lance_host::stream_of) --------------------------------

// An Arrow C Data array that owns its buffers and children (freed by its release callback), as
// a host engine would export one of its batches.
struct OwnedArray {
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<const void*> pointers;
  std::vector<ArrowArray*> children;
  std::vector<ArrowArray*> child_pointers;
};
static void release_owned(ArrowArray* a) {
  auto* o = static_cast<OwnedArray*>(a->private_data);
  for (ArrowArray* c : o->children) {
    if (c->release) c->release(c);
    delete c;
  }
  delete o;
  a->release = nullptr;
}
static ArrowArray owned(int64_t length, std::vector<std::vector<uint8_t>> buffers, std::vector<ArrowArray> children) {
  auto* o = new OwnedArray();
  o->buffers = std::move(buffers);
  for (auto& b : o->buffers) o->pointers.push_back(b.empty() ? nullptr : b.data());
  for (auto& c : children) o->children.push_back(new ArrowArray(c));
  ArrowArray a{};
  a.length = length;
  a.null_count = 0;
  a.n_buffers = static_cast<int64_t>(o->pointers.size());
  a.buffers = o->pointers.data();
  a.n_children = static_cast<int64_t>(o->children.size());
  a.children = o->children.empty() ? nullptr : o->children.data();
  a.release = release_owned;
  a.private_data = o;
  return a;
}
template <class T>
static std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}
// Rows [start, start + n): id int64, name utf8 ("row <id>"), vec fixed_size_list<float, 4> (id, id+1, ...).
static ArrowArray host_batch(int64_t start, int64_t n) {
  std::vector<int64_t> ids;
  std::vector<int32_t> offsets{0};
  std::string text;
  std::vector<float> vec;
  for (int64_t i = start; i < start + n; i++) {
    ids.push_back(i);
    text += "row " + std::to_string(i);
    offsets.push_back(static_cast<int32_t>(text.size()));
    for (int k = 0; k < 4; k++) vec.push_back(static_cast<float>(i + k));
  }
  std::vector<uint8_t> text_bytes(text.begin(), text.end());
  ArrowArray id = owned(n, {{}, bytes_of(ids)}, {});
  ArrowArray name = owned(n, {{}, bytes_of(offsets), text_bytes}, {});
  ArrowArray items = owned(n * 4, {{}, bytes_of(vec)}, {});
  ArrowArray v = owned(n, {{}}, {items});
  return owned(n, {{}}, {id, name, v});
}
struct OwnedSchema {
  std::vector<ArrowSchema*> children;
  std::string format, name;
};
static void release_owned_schema(ArrowSchema* s) {
  auto* o = static_cast<OwnedSchema*>(s->private_data);
  for (ArrowSchema* c : o->children) {
    if (c->release) c->release(c);
    delete c;
  }
  delete o;
  s->release = nullptr;
}
static ArrowSchema owned_schema(const std::string& format, const std::string& name, std::vector<ArrowSchema> children,
                                int64_t flags) {
  auto* o = new OwnedSchema{{}, format, name};
  for (auto& c : children) o->children.push_back(new ArrowSchema(c));
  ArrowSchema s{};
  s.format = o->format.c_str();
  s.name = o->name.c_str();
  s.flags = flags;
  s.n_children = static_cast<int64_t>(o->children.size());
  s.children = o->children.empty() ? nullptr : o->children.data();
  s.release = release_owned_schema;
  s.private_data = o;
  return s;
}
static ArrowSchema host_schema() {
  const int64_t nullable = ARROW_FLAG_NULLABLE;
  return owned_schema("+s", "", {owned_schema("l", "id", {}, 0), owned_schema("u", "name", {}, nullable),
                                 owned_schema("+w:4", "vec", {owned_schema("f", "item", {}, nullable)}, nullable)},
                      0);
}

static void host_batches_are_written_and_read_back(const std::string& dir) {
  namespace lh = lance_host;
  const std::string uri = dir + "/host_batches.lance";
  std::vector<ArrowArray> batches{host_batch(0, 100), host_batch(100, 50)};
  auto [ds, r] = lh::write_table(uri, lh::stream_of(host_schema(), std::move(batches)));
  EXPECT(r.rows_written == 150 && ds.count_rows() == 150);
  // a worker's share from host batches, committed by the coordinator
  lh::WriteRequest append;
  append.mode = LANCE_WRITE_APPEND;
  std::vector<ArrowArray> more{host_batch(150, 10)};
  auto share = lh::stage_write(uri, lh::stream_of(host_schema(), std::move(more)), append, &ds);
  auto [v2, r2] = lh::commit(uri, {share.bytes});
  EXPECT(r2.committed == 1 && v2.count_rows() == 160);
  // read back through Batch: text and fixed-size-list columns
  int64_t seen = 0;
  for (auto& b : v2.scan()) {
    const int64_t* ids = b.values<int64_t>("id");
    for (int64_t row = 0; row < b.num_rows(); row++) {
      EXPECT(b.text("name", row) == "row " + std::to_string(ids[row]));
      auto [v, n] = b.fixed_size_list<float>("vec", row);
      EXPECT(n == 4 && v[0] == static_cast<float>(ids[row]) && v[3] == static_cast<float>(ids[row] + 3));
      seen++;
    }
    try {
      b.text("id", 0);
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.library_code() == LANCE_ERR_INVALID_ARGUMENT);
    }
    try {
      b.fixed_size_list<double>("vec", 0);
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.library_code() == LANCE_ERR_INVALID_ARGUMENT);
    }
  }
  EXPECT(seen == 160);
  // a batch of another layout than the stream's schema: the host stream's failure, nothing written
  std::vector<ArrowArray> bad{host_batch(500, 5), owned(3, {{}}, {owned(3, {{}, bytes_of(std::vector<int64_t>{1, 2, 3})}, {})})};
  try {
    lh::write_table(uri, lh::stream_of(host_schema(), std::move(bad)), append);
    EXPECT(false);
  } catch (const lh::Error& e) {
    EXPECT(e.library_code() == LANCE_ERR_HOST_STREAM);
  }
  EXPECT(lh::Dataset::open(uri).count_rows() == 160);
  // a worker that forgot the append mode is told so
  try {
    lh::stage_write(uri, lh::stream_of(host_schema(), {host_batch(0, 1)}), lh::WriteRequest{}, &v2);
    EXPECT(false);
  } catch (const lh::Error& e) {
    EXPECT(e.library_code() == LANCE_ERR_INVALID_ARGUMENT && std::string(e.what()).find("append") != std::string::npos);
  }
  // cleanup reports the versions and bytes it removed
  auto gone = lh::Dataset::open(uri).cleanup(0, true);
  EXPECT(gone.versions_removed >= 1 && gone.bytes_removed > 0);
  EXPECT(lh::Dataset::open(uri).count_rows() == 160);
}

// Table versions from C++: preconditions and the config fence, change splits, branches and a
// shallow clone, each read back through the library (pylance checks the same in Python tests).
static void table_versions(const std::string& dir) {
  namespace lh = lance_host;
  const std::string uri = dir + "/versions.lance";
  auto [v1, r1] = lh::write_table(uri, lh::stream_of(host_schema(), {host_batch(0, 100)}));
  lh::WriteRequest append;
  append.mode = LANCE_WRITE_APPEND;
  append.expected_version = 7;  // the table is at version 1
  try {
    lh::write_table(uri, lh::stream_of(host_schema(), {host_batch(100, 10)}), append, &v1);
    EXPECT(false);
  } catch (const lh::Error& e) {
    EXPECT(e.library_code() == LANCE_ERR_CONFLICT);
  }
  auto [v2, r2] = v1.update_config({{"fence", "job-1"}});
  EXPECT(r2.version == 2 && v2.config().at("fence") == "job-1");
  append.expected_version = 0;
  append.required_config = {{"fence", "job-0"}};
  try {
    lh::write_table(uri, lh::stream_of(host_schema(), {host_batch(100, 10)}), append, &v2);
    EXPECT(false);
  } catch (const lh::Error& e) {
    EXPECT(e.library_code() == LANCE_ERR_FAILED_PRECONDITION);
  }
  append.required_config = {{"fence", "job-1"}};
  append.expected_version = 2;
  auto [v3, r3] = lh::write_table(uri, lh::stream_of(host_schema(), {host_batch(100, 10)}), append, &v2);
  EXPECT(r3.version == 3 && v3.count_rows() == 110);
  // a branch from version 3, written on, read back by name; main is untouched
  auto dev = v3.create_branch("dev");
  EXPECT(dev.branch() == "dev" && v3.branch() == "main");
  lh::WriteRequest on_branch;
  on_branch.mode = LANCE_WRITE_APPEND;
  auto [dev2, rd] = lh::write_table(dev.uri(), lh::stream_of(host_schema(), {host_batch(500, 5)}), on_branch, &dev);
  EXPECT(lh::Dataset::open_branch(uri, "dev").count_rows() == 115 && lh::Dataset::open(uri).count_rows() == 110);
  EXPECT(v3.branches().at("dev").first == "main" && v3.branches().at("dev").second == 3);
  // the tables here have no stable row ids: change data is refused, not answered empty
  try {
    v3.plan_changes(1);
    EXPECT(false);
  } catch (const lh::Error& e) {
    EXPECT(e.library_code() == LANCE_ERR_NOT_SUPPORTED);
  }
  // a table created with stable row ids keeps row versions: its appended rows are inserts
  lh::WriteRequest stable;
  stable.stable_row_ids = true;
  auto [s1, rs] = lh::write_table(dir + "/stable.lance", lh::stream_of(host_schema(), {host_batch(0, 50)}), stable);
  auto [s2, rs2] = lh::write_table(dir + "/stable.lance", lh::stream_of(host_schema(), {host_batch(50, 7)}), on_branch, &s1);
  auto changes = s2.plan_changes(1, LANCE_CHANGE_INSERTED | LANCE_CHANGE_UPDATED);
  int64_t inserted = 0;
  for (size_t i = 0; i < changes.size(); i++) {
    EXPECT(lance_split_kind(changes.at(i).get()) == LANCE_SPLIT_CHANGES);
    for (auto& b : s2.scan(changes.at(i))) {
      for (int64_t row = 0; row < b.num_rows(); row++) {
        EXPECT(b.text("_change_type", row) == "insert");
        EXPECT(b.values<int64_t>("id")[row] >= 50);
        inserted++;
      }
    }
  }
  EXPECT(inserted == 7);
  // several tables committed together need a namespace that manages them: tables by path
  // are refused, and neither table changes
  lh::WriteRequest share_req;
  share_req.mode = LANCE_WRITE_APPEND;
  auto share_v = lh::stage_write(uri, lh::stream_of(host_schema(), {host_batch(700, 4)}), share_req, &v3);
  auto share_s = lh::stage_write(dir + "/stable.lance", lh::stream_of(host_schema(), {host_batch(700, 4)}), share_req, &s2);
  try {
    lh::commit_tables({{uri, {share_v.bytes}, {}}, {dir + "/stable.lance", {share_s.bytes}, {}}});
    EXPECT(false);
  } catch (const lh::Error& e) {
    EXPECT(e.library_code() == LANCE_ERR_NOT_SUPPORTED);
    EXPECT(std::string(e.what()).find("namespace") != std::string::npos);
  }
  EXPECT(lh::Dataset::open(uri).count_rows() == 110 && lh::Dataset::open(dir + "/stable.lance").version() == 2);
  EXPECT(lh::abort_staged({share_v.bytes, share_s.bytes}) == 2);
  auto clone = v3.shallow_clone(dir + "/versions-clone.lance");
  EXPECT(clone.count_rows() == 110 && clone.version() == v3.version());  // numbered as its source
  v3.delete_branch("dev");
  EXPECT(v3.branches().empty());
}

int main(int argc, char** argv) {
  EXPECT(argc == 2);
  const std::string warehouse = argv[1];
  namespace lh = lance_host;
  EXPECT(lh::library_is_compatible());
  EXPECT(lh::library_version() == LANCE_HOST_VERSION);
  EXPECT(lh::library_build_profile() == "debug" || lh::library_build_profile() == "release");
  {
    // the test command builds the default features: every store and tokenizer, no mimalloc (dev)
    const std::vector<std::string> features = lh::library_build_features();
    for (const char* want : {"store-azure", "store-gcs", "store-oss", "store-cos", "store-tos", "store-hf",
                             "commit-dynamodb", "tokenizer-jieba", "tokenizer-lindera"}) {
      EXPECT(std::find(features.begin(), features.end(), want) != features.end());
    }
    for (const std::string& f : features) EXPECT(!f.empty() && f.find(',') == std::string::npos);
  }
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
    for (size_t i = 0; i < plan.size(); i++) EXPECT(!plan.at(i).row_slice());
    // Splits below a fragment: a target below the largest fragment's rows cuts it into row
    // slices that cover it end to end; their rows add up to the table's.
    uint64_t largest = 0;
    for (size_t i = 0; i < plan.size(); i++) largest = std::max(largest, plan.at(i).row_count());
    auto sliced = ds.plan_scan_slices(largest / 3 + 1);
    for (size_t i = 0; i < ds.plan_scan(largest / 3 + 1).size(); i++) EXPECT(!ds.plan_scan(largest / 3 + 1).at(i).row_slice());
    uint64_t sliced_rows = 0, counted = 0;
    size_t slices = 0;
    for (size_t i = 0; i < sliced.size(); i++) {
      auto shipped = lh::Split::deserialize(sliced.at(i).serialize());
      if (auto r = shipped.row_slice()) {
        slices++;
        EXPECT(r->second > 0 && shipped.fragment_ids().size() == 1);
      }
      for (auto& batch : ds.scan(shipped)) sliced_rows += static_cast<uint64_t>(batch.num_rows());
      counted += shipped.row_count();
    }
    EXPECT(slices >= 3 && sliced_rows == rows && counted == rows);
    // A worker's split scan with options: only `id`, filtered; the filtered counts add up.
    lh::ScanRequest projected;
    projected.columns = {"id"};
    projected.filter = "id % 5 = 0";
    uint64_t matching = 0;
    for (size_t i = 0; i < plan.size(); i++) {
      for (auto& batch : ds.scan(lh::Split::deserialize(plan.at(i).serialize()), projected)) {
        EXPECT(batch.schema().n_children == 1 && std::string(batch.schema().children[0]->name) == "id");
        const int64_t* ids = batch.values<int64_t>("id");
        for (int64_t j = 0; j < batch.num_rows(); j++) EXPECT(ids[j] % 5 == 0);
        matching += static_cast<uint64_t>(batch.num_rows());
      }
    }
    EXPECT(matching == ds.count_rows(std::string("id % 5 = 0")) && matching > 0);

    // An ordered scan with a limit is a top-n: the largest ids first, in order.
    {
      lh::ScanRequest top;
      top.columns = {"id"};
      top.order_by = std::string("id DESC");
      top.limit = 3;
      std::vector<int64_t> got;
      for (auto& batch : ds.scan(top)) {
        const int64_t* ids = batch.values<int64_t>("id");
        got.insert(got.end(), ids, ids + batch.num_rows());
      }
      std::vector<int64_t> all;  // every id, sorted here: the top 3 must be its last 3
      lh::ScanRequest every;
      every.columns = {"id"};
      for (auto& batch : ds.scan(every)) {
        const int64_t* ids = batch.values<int64_t>("id");
        all.insert(all.end(), ids, ids + batch.num_rows());
      }
      std::sort(all.begin(), all.end(), std::greater<int64_t>());
      EXPECT(got.size() == 3 && all.size() >= 3);
      EXPECT(std::equal(got.begin(), got.end(), all.begin()));
    }
    // A dynamic filter tightened after the first batch: every later batch holds only its rows.
    {
      lh::DynamicFilter f(ds, {"id"});
      lh::ScanRequest r;
      r.columns = {"id"};
      r.batch_size = 16;
      r.dynamic_filter = f.get();
      bool first = true;
      uint64_t after = 0;
      for (auto& batch : ds.scan(r)) {
        if (first) {
          first = false;
          EXPECT(batch.num_rows() == 16);
          f.set_sql(std::string("id % 5 = 0"));
          continue;
        }
        const int64_t* ids = batch.values<int64_t>("id");
        for (int64_t j = 0; j < batch.num_rows(); j++) EXPECT(ids[j] % 5 == 0);
        after += static_cast<uint64_t>(batch.num_rows());
      }
      EXPECT(!first && after > 0 && f.generation() == 1);
      bool refused = false;
      try {
        f.set_sql(std::string("no_such_column = 1"));
      } catch (const lh::Error&) {
        refused = true;
      }
      EXPECT(refused && f.generation() == 1);
    }
    // Aggregates: the one-call answer equals the scan's own sums, and the partial states of
    // every (sliced, shipped) split merge to it.
    int64_t id_sum = 0, id_min = INT64_MAX, id_max = INT64_MIN, below_1000 = 0;
    for (auto& batch : ds.scan(projected)) {
      const int64_t* ids = batch.values<int64_t>("id");
      for (int64_t j = 0; j < batch.num_rows(); j++) {
        id_sum += ids[j];
        below_1000 += ids[j] < 1000;
        id_min = std::min(id_min, ids[j]);
        id_max = std::max(id_max, ids[j]);
      }
    }
    lh::AggregateQuery aq;
    aq.count_star().add(LANCE_AGG_SUM, "id").add(LANCE_AGG_MIN, "id").add(LANCE_AGG_MAX, "id", "top");
    aq.filter = "id % 5 = 0";
    auto check_answer = [&](lh::Stream&& s) {
      int64_t seen = 0;
      for (auto& batch : s) {
        EXPECT(batch.num_rows() == 1 && batch.column_index("top") == 3);
        EXPECT(static_cast<uint64_t>(batch.values<int64_t>("count(*)")[0]) == matching);
        EXPECT(batch.values<int64_t>("sum(id)")[0] == id_sum);
        EXPECT(batch.values<int64_t>("min(id)")[0] == id_min && batch.values<int64_t>("top")[0] == id_max);
        seen += batch.num_rows();
      }
      EXPECT(seen == 1);
    };
    check_answer(std::move(ds.aggregate(aq).first));
    std::vector<lh::Stream> partials;
    for (size_t i = 0; i < sliced.size(); i++)
      partials.push_back(std::move(ds.aggregate_split(lh::Split::deserialize(sliced.at(i).serialize()), aq).first));
    check_answer(lh::aggregate_merge(std::move(partials)));
    // an expression argument (since 0.15): exact in double for these sums
    lh::AggregateQuery expr;
    expr.add_expression(LANCE_AGG_SUM, "CAST(id AS DOUBLE) * 2.0", "twice").add(LANCE_AGG_MAX, "id");
    expr.add(LANCE_AGG_COUNT_DISTINCT, "id", "distinct_ids");  // ids are unique: every matching row
    expr.add(LANCE_AGG_APPROX_COUNT_DISTINCT, "id", "approx_ids");  // HyperLogLog: within 3 std errors
    expr.filter = aq.filter;
    for (auto& batch : ds.aggregate(expr).first) {
      EXPECT(batch.num_rows() == 1 && batch.values<double>("twice")[0] == 2.0 * static_cast<double>(id_sum));
      EXPECT(batch.values<int64_t>("max(id)")[0] == id_max);
      EXPECT(static_cast<uint64_t>(batch.values<int64_t>("distinct_ids")[0]) == matching);
      double approx = static_cast<double>(batch.values<int64_t>("approx_ids")[0]);
      double exact = static_cast<double>(matching);
      EXPECT(approx >= exact - std::max(2.0, 0.048 * exact) && approx <= exact + std::max(2.0, 0.048 * exact));
    }
    // a group key of an expression (since 0.15): the rows on each side of 1000
    lh::AggregateQuery banded;
    banded.group_by_expression("band", "CASE WHEN id < 1000 THEN 'low' ELSE 'high' END").count_star("n");
    banded.filter = aq.filter;
    int64_t low = -1, total = 0;
    for (auto& batch : ds.aggregate(banded).first) {
      EXPECT(batch.column_index("band") == 0);
      const ArrowArray* band = batch.array().children[0];
      const int32_t* offsets = static_cast<const int32_t*>(band->buffers[1]) + band->offset;
      const char* text = static_cast<const char*>(band->buffers[2]);
      for (int64_t j = 0; j < batch.num_rows(); j++) {
        std::string key(text + offsets[j], text + offsets[j + 1]);
        int64_t n = batch.values<int64_t>("n")[j];
        total += n;
        if (key == "low") low = n;
      }
    }
    EXPECT(low == below_1000 && static_cast<uint64_t>(total) == matching);
    // the same query as a Substrait plan (since 0.15): COUNT(*) of a ReadRel, named "n"
    {
      lh::AggregateQuery fields;
      fields.count_star();
      int64_t rows = -1;
      for (auto& batch : ds.aggregate(fields).first) rows = batch.values<int64_t>("count(*)")[0];
      auto plan = lh::AggregateQuery::from_substrait(count_star_plan());
      int64_t got = -1;
      for (auto& batch : ds.aggregate(plan).first) got = batch.values<int64_t>("n")[0];
      std::vector<lh::Stream> plan_partials;
      for (size_t i = 0; i < sliced.size(); i++) plan_partials.push_back(std::move(ds.aggregate_split(sliced.at(i), plan).first));
      int64_t merged = -1;
      for (auto& batch : lh::aggregate_merge(std::move(plan_partials))) merged = batch.values<int64_t>("n")[0];
      EXPECT(rows > 0 && got == rows && merged == rows);
      try {
        auto garbage = lh::AggregateQuery::from_substrait({0xff, 0xff, 0xff});
        ds.aggregate(garbage);
        EXPECT(false);
      } catch (const lh::Error& e) {
        EXPECT(e.library_code() == LANCE_ERR_INVALID_ARGUMENT && std::string(e.what()).find("Substrait") != std::string::npos);
      }
    }
    try {
      lh::AggregateQuery wraps;
      wraps.add_expression(LANCE_AGG_SUM, "id * id");
      ds.aggregate(wraps);
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.library_code() == LANCE_ERR_NOT_SUPPORTED && std::string(e.what()).find("DECIMAL(38, 0)") != std::string::npos);
    }
    try {
      lh::AggregateQuery bad;
      bad.add(LANCE_AGG_SUM, "no_such_column");
      ds.aggregate(bad);
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.library_code() == LANCE_ERR_INVALID_ARGUMENT && std::string(e.what()).find("no_such_column") != std::string::npos);
    }
    lh::ScanRequest with_fragments;
    with_fragments.fragment_ids = {0};
    try {
      ds.scan(plan.at(0), with_fragments);
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.library_code() == LANCE_ERR_INVALID_ARGUMENT && e.name() == "LANCE_ERR_INVALID_ARGUMENT");
    }

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
    EXPECT(docs.explain_fts(fplan.at(0), tq, stats).find("text_idx") != std::string::npos);
    // Without statistics: only a split that is the whole corpus. The latest version's segments
    // leave a tail out (refused); an earlier, fully indexed version's segments do not.
    try {
      docs.fts_search(fplan.at(0), tq);
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.code() == LANCE_ERR_INVALID_ARGUMENT);
    }
    bool searched_whole = false;
    for (uint64_t v = docs.version(); v >= 1 && !searched_whole; v--) {
      auto at = lh::Dataset::open(fact(warehouse, "docs.uri"), {}, v);
      std::vector<lh::Split> parts;
      try {
        auto p = at.plan_fts("text");
        for (size_t i = 0; i < p.size(); i++) parts.push_back(p.at(i));
      } catch (const lh::Error&) {
        continue;  // a version before the index
      }
      bool segments_only = parts.size() >= 2;
      for (auto& p : parts) segments_only = segments_only && p.kind() == LANCE_SPLIT_FTS_SEGMENT;
      if (!segments_only) continue;
      auto whole = lh::Split::combine(parts);
      auto st = at.fts_stats(tq);
      std::vector<std::pair<uint64_t, float>> with, without;
      for (auto& b : at.fts_search(whole, tq, st))
        for (int64_t i = 0; i < b.num_rows(); i++)
          with.emplace_back(b.values<uint64_t>(b.column_index("_rowid"))[i], b.values<float>(b.column_index("_score"))[i]);
      for (auto& b : at.fts_search(whole, tq))
        for (int64_t i = 0; i < b.num_rows(); i++)
          without.emplace_back(b.values<uint64_t>(b.column_index("_rowid"))[i], b.values<float>(b.column_index("_score"))[i]);
      EXPECT(!with.empty() && with.size() == without.size());
      for (size_t i = 0; i < with.size(); i++)
        EXPECT(with[i].first == without[i].first && std::fabs(with[i].second - without[i].second) <= 1e-5f * with[i].second);
      searched_whole = true;
    }
    EXPECT(searched_whole);
    try {
      lh::TextSearchRequest empty = tq;
      empty.text = "";
      docs.fts_stats(empty);
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.code() == LANCE_ERR_INVALID_ARGUMENT);
    }

    // Metadata, statistics, indexes, counts, explain, snapshot tokens, prewarm, refine.
    EXPECT(!ds.storage_format().empty());
    EXPECT(ds.latest_version() == ds.version() && ds.version() == std::stoull(fact(warehouse, "vectors.version")));
    auto schema = ds.schema();
    EXPECT(schema->n_children > 0);
    auto frags = ds.fragments();
    EXPECT(frags.size() == std::stoull(fact(warehouse, "vectors.fragments")));
    uint64_t logical = 0;
    for (const auto& f : frags) logical += f.logical_rows;
    EXPECT(logical == rows);
    EXPECT(ds.versions().back().version == ds.version());
    auto table_stats = ds.statistics();
    EXPECT(table_stats.fragments.size() == frags.size() && !table_stats.columns.empty());
    auto [under_100, count_io] = ds.count_rows_with_io(std::string("id < 100"));
    EXPECT(under_100 > 0 && under_100 < 100 && count_io.struct_size == sizeof(LanceIoStats));
    auto first = plan.at(0);
    EXPECT(ds.count_split_rows(first).first == first.row_count());
    EXPECT(first.uri() == ds.uri() && !first.segment_uuid().has_value());
    EXPECT(first.open_dataset().version() == ds.version());
    EXPECT(!ds.explain_scan().empty());
    auto token = ds.export_snapshot();
    EXPECT(lh::Dataset::open_snapshot(token).version() == ds.version());
    {
      // A split-scoped token: smaller, runs its split, refuses whole-table calls.
      auto scoped = ds.export_split_snapshot(first);
      EXPECT(scoped.size() < token.size());
      lh::Dataset worker = lh::Dataset::open_snapshot(scoped);
      EXPECT(worker.version() == ds.version() && worker.uri() == ds.uri());
      EXPECT(worker.count_split_rows(first).first == first.row_count());
      bool refused = false;
      try {
        worker.count_rows();
      } catch (const lh::Error& e) {
        refused = e.code() == LANCE_ERR_INVALID_ARGUMENT &&
                  std::string(e.what()).find("split-scoped") != std::string::npos;
      }
      EXPECT(refused);
    }
    EXPECT(lh::Dataset::open_at_timestamp(ds.uri(), INT64_MAX).version() == ds.version());
    EXPECT(lh::Dataset::open_at_timestamp_us(ds.uri(), INT64_MAX).version() == ds.version());
    {
      bool refused = false;  // before the first version was committed: NOT_FOUND
      try {
        lh::Dataset::open_at_timestamp_us(ds.uri(), 1);
      } catch (const lh::Error& e) {
        refused = e.code() == LANCE_ERR_NOT_FOUND;
      }
      EXPECT(refused);
    }
    auto indexes = ds.indexes();
    const lh::Dataset::IndexInfo* pq = nullptr;
    for (const auto& i : indexes)
      if (i.name == "emb_pq") pq = &i;
    EXPECT(pq != nullptr && pq->metric.has_value() && pq->segments.size() >= 2);
    const uint64_t partitions = std::stoull(fact(warehouse, "vectors.emb_pq.partitions"));
    for (const auto& s : pq->segments) EXPECT(s.num_partitions == partitions);
    ds.prewarm_index_segments("emb_pq", {pq->segments[0].uuid});
    EXPECT(ds.prewarm_index_with_stats("emb_pq").index_cache_hits >= 1);  // segment 0 was warm
    std::vector<lh::Stream> cands;
    lh::SearchRequest dq = q;
    dq.refine_factor = 4;
    dq.defer_refine = true;
    lh::Stream flat_parts[8];
    size_t n_flat = 0;
    for (size_t i = 0; i < vplan.size(); i++) {
      auto split = vplan.at(i);
      if (split.kind() == LANCE_SPLIT_INDEX_SEGMENT) {
        EXPECT(split.segment_uuid().has_value());
        EXPECT(!ds.explain_search(split, dq).empty());
        cands.push_back(ds.search(split, dq));
      } else {
        flat_parts[n_flat++] = ds.search(split, q);
      }
    }
    auto refined = ds.refine(lh::merge(std::move(cands), dq.k * dq.refine_factor), q);
    std::vector<lh::Stream> final_parts;
    final_parts.push_back(std::move(refined));
    for (size_t i = 0; i < n_flat; i++) final_parts.push_back(std::move(flat_parts[i]));
    std::vector<uint64_t> refined_ids;
    for (auto& batch : lh::merge(std::move(final_parts), 5)) {
      const uint64_t* r = batch.values<uint64_t>(batch.column_index("_rowid"));
      refined_ids.insert(refined_ids.end(), r, r + batch.num_rows());
    }
    EXPECT(refined_ids.size() == 5 && refined_ids[0] == row_ids[0]);  // the query's own row first
    // The same search with the segment splits combined into one split: one call, same answer.
    std::vector<lh::Split> seg_splits;
    std::vector<lh::Stream> combined_parts;
    for (size_t i = 0; i < vplan.size(); i++) {
      auto split = vplan.at(i);
      if (split.kind() == LANCE_SPLIT_INDEX_SEGMENT) seg_splits.push_back(std::move(split));
      else combined_parts.push_back(ds.search(split, q));
    }
    auto both = lh::Split::deserialize(lh::Split::combine(seg_splits).serialize());
    EXPECT(both.segment_uuids().size() == seg_splits.size() && both.segment_uuids()[1] == *seg_splits[1].segment_uuid());
    try {
      both.segment_uuid();
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.code() == LANCE_ERR_INVALID_ARGUMENT);
    }
    combined_parts.push_back(ds.refine(ds.search(both, dq), q));
    std::vector<uint64_t> combined_ids;
    for (auto& batch : lh::merge(std::move(combined_parts), 5)) {
      const uint64_t* r = batch.values<uint64_t>(batch.column_index("_rowid"));
      combined_ids.insert(combined_ids.end(), r, r + batch.num_rows());
    }
    EXPECT(combined_ids == refined_ids);
    try {
      lh::Split::combine(std::vector<const lh::Split*>{&seg_splits[0], &first});
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.code() == LANCE_ERR_INVALID_ARGUMENT && std::string(e.what()).find("split 1") != std::string::npos);
    }

    // Catalog metadata, call contexts, logging, metrics.
    auto info = catalog.describe_table("vectors");
    EXPECT(info.location.find("vectors.lance") != std::string::npos && info.latest_version == ds.version());
    EXPECT(catalog.list_namespaces().empty());  // the plain layout has none
    auto nested_catalog = lh::Catalog::open({{"root", fact(warehouse, "nested.root")}});
    auto all_ns = nested_catalog.list_namespaces({}, true);
    bool deep = false;
    for (const auto& ns : all_ns) deep |= ns.size() >= 2;
    EXPECT(!all_ns.empty() && deep);
    lh::CallContext ctx;
    ctx.cancel();
    {
      auto scope = ctx.enter();
      try {
        lh::Dataset::open(ds.uri());
        EXPECT(false);
      } catch (const lh::Error& e) {
        EXPECT(e.code() == LANCE_ERR_CANCELLED);
      }
    }
    EXPECT(lh::Dataset::open(ds.uri()).version() == ds.version());
    std::atomic<int> records{0};
    lh::set_log_callback([&records](int32_t, const char*, const char*) { records++; }, LANCE_LOG_DEBUG);
    for (auto& batch : ds.scan()) (void)batch;
    lh::set_log_callback({});
    EXPECT(records.load() > 0);
    EXPECT(!lh::metrics().empty());

    // A credential callback needs options that say when they expire; refused, nothing is kept.
    bool fetched = false;
    try {
      lh::register_credentials(ds.uri(), {{"region", "x"}}, [&fetched](const std::string&) {
        fetched = true;
        return std::map<std::string, std::string>{};
      });
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.code() == LANCE_ERR_INVALID_ARGUMENT);
      EXPECT(std::string(e.what()).find("expires_at_millis") != std::string::npos);
    }
    lh::register_credentials(ds.uri(), {{"expires_at_millis", "99999999999999"}},
                             [](const std::string&) { return std::map<std::string, std::string>{}; });
    // a local table with options that never come close to expiring: nothing to refresh
    EXPECT(lh::Dataset::open(ds.uri(), {{"expires_at_millis", "99999999999999"}}).version() == ds.version());
    EXPECT(!fetched);

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
    // Blobs of the testkit's blobs table: every byte of every value follows the testkit's
    // formula (byte j of row id = (id * 31 + j * 7) % 251); a range read of the middle of a
    // 300,000-byte dedicated blob and a read into caller memory.
    {
      lh::Dataset blobs_ds = lh::Dataset::open(fact(warehouse, "blobs.uri"));
      lh::ScanRequest br;
      br.columns = {"id"};
      br.with_row_id = true;
      std::vector<uint64_t> rowids;
      std::vector<int64_t> ids;
      for (auto& batch : blobs_ds.scan(br)) {
        for (int64_t r = 0; r < batch.num_rows(); r++) {
          ids.push_back(batch.values<int64_t>("id")[r]);
          rowids.push_back(batch.values<uint64_t>("_rowid")[r]);
        }
      }
      EXPECT(ids.size() == std::stoull(fact(warehouse, "blobs.rows")));
      lh::Blobs blobs = blobs_ds.take_blobs("payload", rowids);
      EXPECT(blobs.size() == rowids.size());
      bool saw_dedicated = false;
      for (size_t i = 0; i < blobs.size(); i++) {
        LanceBlobInfo inf = blobs.info(i);
        EXPECT(inf.row_id == rowids[i]);
        if (ids[i] % 10 == 7) {
          EXPECT(inf.is_null && inf.kind == LANCE_BLOB_NULL);
          continue;
        }
        const uint64_t off = inf.size / 2, len = inf.size - inf.size / 2 < 1000 ? inf.size - inf.size / 2 : 1000;
        std::vector<uint8_t> got = blobs.read(i, off, len);
        EXPECT(got.size() == len);
        for (uint64_t j = 0; j < len; j++)
          EXPECT(got[j] == static_cast<uint8_t>((static_cast<uint64_t>(ids[i]) * 31 + (off + j) * 7) % 251));
        if (inf.kind == LANCE_BLOB_DEDICATED) {
          saw_dedicated = true;
          EXPECT(inf.size == 300000);
          uint8_t buf[64];
          blobs.read_into(i, 299936, buf, sizeof buf);
          for (size_t j = 0; j < sizeof buf; j++)
            EXPECT(buf[j] == static_cast<uint8_t>((static_cast<uint64_t>(ids[i]) * 31 + (299936 + j) * 7) % 251));
          try {
            blobs.read(i, 299990, 20);
            EXPECT(false);
          } catch (const lh::Error& e) {
            EXPECT(e.code() == LANCE_ERR_INVALID_ARGUMENT);
          }
        }
      }
      EXPECT(saw_dedicated);
      (void)blobs.io_stats();
      try {
        blobs_ds.take_blobs("id", rowids);
        EXPECT(false);
      } catch (const lh::Error& e) {
        EXPECT(e.code() == LANCE_ERR_INVALID_ARGUMENT);
      }
    }
    // Non-blocking reads: poll, park on a condition variable the wake callback signals,
    // poll again — the same rows as the blocking scan.
    {
      struct Waiter {
        std::mutex m;
        std::condition_variable cv;
        bool woken = false;
      } w;
      auto wake = [](void* p) {
        auto* w = static_cast<Waiter*>(p);
        std::lock_guard<std::mutex> g(w->m);
        w->woken = true;
        w->cv.notify_one();
      };
      auto polled_stream = ds.scan();
      uint64_t polled_rows = 0;
      for (;;) {
        w.woken = false;
        auto p = polled_stream.poll(wake, &w);
        if (p.state == lh::Stream::PollState::End) break;
        if (p.state == lh::Stream::PollState::Ready) {
          polled_rows += static_cast<uint64_t>(p.batch->num_rows());
          continue;
        }
        std::unique_lock<std::mutex> g(w.m);
        EXPECT(w.cv.wait_for(g, std::chrono::seconds(60), [&] { return w.woken; }));
      }
      EXPECT(polled_rows == rows);
      try {
        polled_stream.poll();
        EXPECT(false);
      } catch (const lh::Error& e) {
        EXPECT(e.code() == LANCE_ERR_FAILED_PRECONDITION);
      }
    }
    // A cancelled stream throws ECANCELED from next().
    auto s = ds.scan();
    s.cancel();
    try {
      s.next();
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.code() == ECANCELED);
      EXPECT(e.source() == lh::Error::Source::Stream && e.stream_errno() == ECANCELED && !e.library_code());
      EXPECT(e.name() == "ECANCELED");
    }
    // A library error says it is one (LANCE_ERR_NOT_FOUND and ENOENT are both 2).
    try {
      lh::Dataset::open(warehouse + "/missing.lance");
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.library_code() == LANCE_ERR_NOT_FOUND && !e.stream_errno());
      EXPECT(e.name() == "LANCE_ERR_NOT_FOUND");
    }
    // Checked, null-aware column access.
    lh::ScanRequest two;
    two.columns = {"id", "category"};
    two.limit = 3;
    for (auto& batch : ds.scan(two)) {
      EXPECT(batch.values<int64_t>("id")[0] >= 0);
      EXPECT(!batch.is_null(0, 0));
      for (auto bad_access : {0, 1, 2}) {
        try {
          if (bad_access == 0) batch.values<double>("id");          // wrong type
          if (bad_access == 1) batch.values<int64_t>("no_such");    // missing column (-1)
          if (bad_access == 2) batch.is_null(0, batch.num_rows());  // row out of range
          EXPECT(false);
        } catch (const lh::Error& e) {
          EXPECT(e.library_code() == LANCE_ERR_INVALID_ARGUMENT);
        }
      }
    }
    // A NULL plan handle is refused; splits deserialize from a borrowed buffer.
    try {
      lh::SplitPlan null_plan(nullptr);
      EXPECT(false);
    } catch (const lh::Error&) {
    }
    auto bytes = plan.at(0).serialize();
    EXPECT(lh::Split::deserialize(bytes.data(), bytes.size()).row_count() == plan.at(0).row_count());

    // Writes: a table created from a scan (CREATE TABLE AS SELECT), two workers' staged appends
    // from split scans committed once (exactly once by statement id), a delete, a conflict.
    char dir_template[] = "/tmp/lance_host_cpp_write_XXXXXX";
    EXPECT(mkdtemp(dir_template) != nullptr);
    const std::string target = std::string(dir_template) + "/copy.lance";
    host_batches_are_written_and_read_back(dir_template);
    table_versions(dir_template);
    lh::ScanRequest small;
    small.columns = {"id", "category"};
    small.filter = "id < 300";
    lh::WriteRequest create;
    create.commit_message = "copy of vectors";
    auto [copy, created] = lh::write_table(target, ds.scan(small), create);
    const uint64_t small_rows = ds.count_rows(std::string("id < 300"));
    EXPECT(created.version == 1 && created.rows_written == small_rows && created.committed == 1);
    EXPECT(copy.count_rows() == small_rows);
    lh::WriteRequest append;
    append.mode = LANCE_WRITE_APPEND;
    std::vector<std::vector<uint8_t>> shares;
    lh::ScanRequest big = small;
    big.filter = "id >= 300";
    uint64_t staged_rows = 0;
    for (size_t i = 0; i < plan.size() && i < 2; i++) {
      lh::Dataset worker = lh::Dataset::open_snapshot(copy.export_snapshot());
      auto share = lh::stage_write(target, ds.scan(plan.at(i), big), append, &worker);
      staged_rows += share.result.rows_written;
      shares.push_back(std::move(share.bytes));
    }
    append.statement_id = "cpp-statement-1";
    auto [appended, committed] = lh::commit(target, shares, append);
    EXPECT(committed.version == 2 && committed.rows_written == staged_rows && committed.committed == 1);
    EXPECT(appended.count_rows() == small_rows + staged_rows);
    auto [again, repeated] = lh::commit(target, shares, append);
    EXPECT(repeated.version == 2 && repeated.committed == 0 && again.count_rows() == small_rows + staged_rows);
    auto [trimmed, deleted] = appended.delete_rows("id % 2 = 0");
    EXPECT(deleted.version == 3 && deleted.rows_deleted > 0);
    EXPECT(trimmed.count_rows() == appended.count_rows() - deleted.rows_deleted);
    auto [renamed, upd] = trimmed.update({{"category", "'x'"}}, std::string("id < 100"));
    EXPECT(upd.version == 4 && upd.rows_updated == trimmed.count_rows(std::string("id < 100")));
    lh::MergeRequest upsert;
    upsert.on = {"id"};
    upsert.when_matched = LANCE_WHEN_MATCHED_UPDATE_ALL;
    auto [upserted, mr] = renamed.merge_insert(ds.scan(small), upsert);  // the original rows back
    EXPECT(mr.version == 5 && mr.rows_updated + mr.rows_inserted == small_rows);
    EXPECT(upserted.count_rows(std::string("category = 'x'")) == 0);
    lh::WriteRequest overwrite;
    overwrite.mode = LANCE_WRITE_OVERWRITE;
    auto stale = lh::stage_write(target, ds.scan(small), overwrite, &appended);  // planned at 2
    try {
      lh::commit(target, {stale.bytes}, overwrite);  // version 3 was committed since
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.library_code() == LANCE_ERR_CONFLICT && e.name() == "LANCE_ERR_CONFLICT");
    }
    EXPECT(lh::abort_staged({stale.bytes}) >= 1);
    EXPECT(lh::Dataset::open(target).version() == 5);
    // maintenance: tag, compact, open the tag, restore it, cleanup keeps the tagged version
    upserted.create_tag("before-compact");
    EXPECT(upserted.tags().at("before-compact") == 5);
    auto [compacted, cr] = upserted.compact();
    EXPECT(cr.version > 5 && cr.version == compacted.version() && compacted.count_rows() == upserted.count_rows());
    auto tagged = lh::Dataset::open_tag(target, "before-compact");
    EXPECT(tagged.version() == 5);
    auto restored = tagged.restore();
    EXPECT(restored.version() == cr.version + 1 && restored.count_rows() == upserted.count_rows());
    compacted.cleanup(1);
    EXPECT(lh::Dataset::open(target, {}, 5).count_rows() == upserted.count_rows());
    restored.delete_tag("before-compact");
    EXPECT(restored.tags().empty());
    // distributed delete over scan splits, staged merge-insert, distributed compaction, columns
    auto base = lh::Dataset::open(target);
    uint64_t before = base.count_rows();
    auto dplan = base.plan_scan(0);
    std::vector<std::vector<uint8_t>> dshares;
    uint64_t share_rows = 0;
    for (size_t i = 0; i < dplan.size(); i++) {
      auto split = dplan.at(i);
      auto share = base.stage_delete("id % 5 = 2", &split);
      share_rows += share.result.rows_deleted;
      dshares.push_back(share.bytes);
    }
    auto [after_delete, dr] = lh::commit(target, dshares);
    EXPECT(dr.rows_deleted == share_rows && after_delete.count_rows() == before - share_rows && share_rows > 0);
    lh::MergeRequest upsert2;
    upsert2.on = {"id"};
    upsert2.when_matched = LANCE_WHEN_MATCHED_UPDATE_ALL;
    auto merge_share = after_delete.stage_merge_insert(ds.scan(small), upsert2);
    auto [merged2, mr2] = lh::commit(target, {merge_share.bytes});
    EXPECT(mr2.rows_inserted == merge_share.result.rows_inserted && mr2.rows_updated == merge_share.result.rows_updated);
    // row-level delete by address: the rows read with _rowaddr, staged in two shares, one commit
    {
      lh::ScanRequest addr_scan;
      addr_scan.columns = {"_rowaddr"};
      addr_scan.filter = "id % 5 = 1";
      std::vector<uint64_t> addrs;
      for (auto& batch : merged2.scan(addr_scan)) {
        const uint64_t* a = batch.values<uint64_t>("_rowaddr");
        addrs.insert(addrs.end(), a, a + batch.num_rows());
      }
      EXPECT(!addrs.empty());
      size_t half = addrs.size() / 2;
      auto s1 = merged2.stage_row_deletes(std::vector<uint64_t>(addrs.begin(), addrs.begin() + half));
      auto s2 = merged2.stage_row_deletes(std::vector<uint64_t>(addrs.begin() + half, addrs.end()));
      EXPECT(s1.result.rows_deleted + s2.result.rows_deleted == addrs.size());
      uint64_t rows_before = merged2.count_rows();
      auto [rowdel, rr] = lh::commit(target, {s1.bytes, s2.bytes});
      EXPECT(rr.rows_deleted == addrs.size() && rowdel.count_rows() == rows_before - addrs.size());
      EXPECT(rowdel.count_rows(std::string("id % 5 = 1")) == 0);
      try {  // an address given twice
        merged2.stage_row_deletes({addrs[0], addrs[0]});
        EXPECT(false);
      } catch (const lh::Error& e) {
        EXPECT(e.library_code() == LANCE_ERR_INVALID_ARGUMENT);
      }
    }
    lh::CompactRequest whole;
    whole.target_rows_per_fragment = 1000000;
    auto merged3 = lh::Dataset::open(target);
    auto tasks = merged3.plan_compaction(whole);
    std::vector<std::vector<uint8_t>> compact_results;
    for (const auto& t : tasks) compact_results.push_back(lh::Dataset::open(target, {}, merged3.version()).execute_compaction_task(t));
    if (!tasks.empty()) {
      auto [dc, dcr] = merged3.commit_compaction(compact_results, whole);
      EXPECT(dcr.version > merged3.version() && dc.count_rows() == merged3.count_rows());
    }
    auto latest_now = lh::Dataset::open(target);
    auto with_col = latest_now.add_columns({{"id_plus_1", "id + 1"}});
    EXPECT(with_col.count_rows("id_plus_1 = id + 1") == latest_now.count_rows());
    auto without = with_col.drop_columns({"id_plus_1"});
    EXPECT(without.version() == with_col.version() + 1);
    try {
      without.drop_columns({"id_plus_1"});
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.library_code() == LANCE_ERR_INVALID_ARGUMENT);
    }
    // catalog DDL: a namespace, CREATE TABLE AS a scan, drops
    char ddl_template[] = "/tmp/lance_host_cpp_ddl_XXXXXX";
    EXPECT(mkdtemp(ddl_template) != nullptr);
    auto ddl = lh::Catalog::open({{"type", "dir"}, {"root", ddl_template}});
    ddl.create_namespace({"lake"});
    ddl.create_namespace({"lake"}, /*exist_ok=*/true);
    auto [created_copy, created_result] = ddl.create_table("copy", ds.scan(small), {"lake"});
    EXPECT(created_result.version == 1 && created_copy.count_rows() == small_rows);
    EXPECT(ddl.list_tables({"lake"}) == std::vector<std::string>{"copy"});
    ddl.drop_namespace({"lake"}, /*cascade=*/true);
    EXPECT(ddl.list_namespaces({}, true).empty());
    // index builds on the written copy: a vector, a scalar and a full-text index, then drops
    lh::ScanRequest with_vectors;
    with_vectors.columns = {"id", "embedding"};
    with_vectors.filter = "id < 300";
    auto to_index = lh::write_table(target + ".vectors", ds.scan(with_vectors)).first;
    lh::VectorIndexRequest ivf;
    ivf.index_type = LANCE_VECTOR_INDEX_IVF_FLAT;
    ivf.num_partitions = 2;
    auto with_vec = to_index.create_vector_index("embedding", ivf, "emb_flat");
    auto with_btree = with_vec.create_scalar_index("id", LANCE_SCALAR_INDEX_BTREE, "id_btree");
    EXPECT(with_btree.version() == to_index.version() + 2);
    bool listed_vec = false, listed_btree = false;
    for (const auto& info : with_btree.indexes()) {
      listed_vec |= info.name == "emb_flat";
      listed_btree |= info.name == "id_btree";
    }
    EXPECT(listed_vec && listed_btree);
    try {
      with_btree.create_vector_index("embedding", ivf, "emb_flat");  // exists, no replace
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.library_code() == LANCE_ERR_INVALID_ARGUMENT);
    }
    auto optimized = with_btree.optimize_indexes();  // nothing appended: nothing to index
    EXPECT(optimized.count_rows() == with_btree.count_rows());
    auto no_indexes = with_btree.drop_index("emb_flat").drop_index("id_btree");
    EXPECT(no_indexes.indexes().empty());
    // the distributed build: model, tasks, segments (as a worker would), one commit
    lh::CallContext progress_ctx;
    size_t progress_reports = 0;
    progress_ctx.on_progress([&](const char*, uint64_t, uint64_t, const char*) { progress_reports++; });
    std::vector<uint8_t> model;
    {
      auto scope = progress_ctx.enter();
      model = no_indexes.train_vector_index("embedding", ivf);
    }
    EXPECT(!model.empty() && progress_reports > 0);
    auto vector_tasks = no_indexes.plan_vector_index_build("embedding", model, {}, "emb_dist");
    EXPECT(!vector_tasks.empty());
    std::vector<std::vector<uint8_t>> vector_segments;
    for (const auto& task : vector_tasks) vector_segments.push_back(no_indexes.execute_index_build_task(task));
    auto distributed = no_indexes.commit_index_build(vector_segments, /*merge=*/true);
    EXPECT(distributed.version() == no_indexes.version() + 1);
    lh::InvertedIndexRequest inverted;
    try {
      distributed.plan_inverted_index_build("id", inverted);  // not a string column
      EXPECT(false);
    } catch (const lh::Error& e) {
      EXPECT(e.library_code() == LANCE_ERR_INVALID_ARGUMENT);
    }
    lh::IndexBuildPlan one_split;
    one_split.num_splits = 1;
    auto scalar_tasks = distributed.plan_scalar_index_build("id", LANCE_SCALAR_INDEX_BTREE, one_split);
    EXPECT(scalar_tasks.size() == 1);
    auto with_dist_btree = distributed.commit_index_build({distributed.execute_index_build_task(scalar_tasks[0])});
    EXPECT(with_dist_btree.indexes().size() == 2);
    auto nothing_left = with_dist_btree.plan_scalar_index_build("id", LANCE_SCALAR_INDEX_BTREE, lh::IndexBuildPlan{0, true});
    EXPECT(nothing_left.empty());  // every fragment is indexed already
    std::printf("cpp_api: ok (%llu rows, nearest id %lld)\n", static_cast<unsigned long long>(rows),
                static_cast<long long>(ids[0]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    return 1;
  }
  return 0;
}
