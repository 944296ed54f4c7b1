// lance_host.hpp — header-only C++17 API over the lance-host C ABI (lance_host.h).
//
// RAII handles (move-only; destructors call the matching *_free), errors as exceptions carrying
// the library's code and message (lance_host::Error), and streams iterated as ranges of Arrow
// C Data batches — no Arrow C++ dependency. Thread-safety is the C API's: Dataset, Catalog,
// Split and SplitPlan objects may be used by many threads at once; a Stream is consumed by one
// thread at a time (Stream::cancel may be called from any thread).
#ifndef LANCE_HOST_HPP
#define LANCE_HOST_HPP

#include <algorithm>
#include <cerrno>
#include <array>
#include <deque>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <utility>
#include <vector>

#include "lance_host.h"

namespace lance_host {

/// A failed call. `source()` says what `code()` is: a library `LanceErrorCode` (from a function
/// of the C API) or the errno a stream's `get_next` / `get_schema` returned (the two number
/// spaces overlap: LANCE_ERR_NOT_FOUND and ENOENT are both 2). `what()` is the message, which
/// starts with the code's name.
class Error : public std::runtime_error {
 public:
  enum class Source { Library, Stream };
  Error(int32_t code, const std::string& message, Source source = Source::Library)
      : std::runtime_error(message), code_(code), source_(source) {}
  int32_t code() const noexcept { return code_; }
  Source source() const noexcept { return source_; }
  /// The library's error code, or nullopt for a stream errno.
  std::optional<LanceErrorCode> library_code() const noexcept {
    if (source_ != Source::Library) return std::nullopt;
    return static_cast<LanceErrorCode>(code_);
  }
  /// The code's name: the library's constant ("LANCE_ERR_NOT_FOUND") or, for a stream, the
  /// errno's ("ECANCELED"; "errno <n>" for one the library does not return).
  std::string name() const {
    if (source_ == Source::Library) return lance_error_code_name(code_);
    switch (code_) {
      case EIO: return "EIO";
      case ENOENT: return "ENOENT";
      case EINVAL: return "EINVAL";
      case EACCES: return "EACCES";
      case EBADMSG: return "EBADMSG";
      case ENOTSUP: return "ENOTSUP";
      case ETIMEDOUT: return "ETIMEDOUT";
      case ECANCELED: return "ECANCELED";
      default: return "errno " + std::to_string(code_);
    }
  }
  /// The stream's errno, or nullopt for a library error.
  std::optional<int> stream_errno() const noexcept {
    if (source_ != Source::Stream) return std::nullopt;
    return code_;
  }
  /// The calling thread's last error.
  static Error last() {
    int32_t code = static_cast<int32_t>(lance_last_error_code());
    return Error(code, std::string(lance_error_code_name(code)) + ": " + lance_last_error_message());
  }
  /// A stream failure: `rc` is the errno `get_next`/`get_schema` returned.
  static Error from_stream(int rc, const char* message) {
    return Error(rc, std::string("stream errno ") + std::to_string(rc) + ": " + (message ? message : ""), Source::Stream);
  }

 private:
  int32_t code_;
  Source source_;
};

/// The loaded library's version ("major.minor.patch"; compare with LANCE_HOST_VERSION).
inline std::string library_version() { return lance_host_version(); }
/// How the loaded library was compiled: "release" or "debug" (many times slower).
inline std::string library_build_profile() { return lance_host_build_profile(); }

/// The optional features of the loaded library (lance_host_build_features), e.g. "store-gcs".
inline std::vector<std::string> library_build_features() {
  std::vector<std::string> out;
  std::string text = lance_host_build_features();
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

/// Whether the loaded library serves code built with this header: same major version and at
/// least this header's version (see "ABI compatibility" in the README). Call once at start-up.
inline bool library_is_compatible() {
  const uint32_t v = lance_host_version_number();
  return v / 10000 == LANCE_HOST_VERSION_MAJOR && v >= LANCE_HOST_VERSION_NUMBER;
}

inline void check(int32_t rc) {
  if (rc != LANCE_OK) throw Error::last();
}

template <class T>
T* check_ptr(T* p) {
  if (p == nullptr) throw Error::last();
  return p;
}

namespace detail {
/// NULL-terminated key/value array over a map (valid while the map lives).
class KeyValues {
 public:
  explicit KeyValues(const std::map<std::string, std::string>& kv) {
    for (const auto& [k, v] : kv) {
      ptrs_.push_back(k.c_str());
      ptrs_.push_back(v.c_str());
    }
    ptrs_.push_back(nullptr);
  }
  const char* const* get() const { return ptrs_.size() > 1 ? ptrs_.data() : nullptr; }

 private:
  std::vector<const char*> ptrs_;
};

inline std::vector<const char*> c_strings(const std::vector<std::string>& v) {
  std::vector<const char*> out;
  out.reserve(v.size());
  for (const auto& s : v) out.push_back(s.c_str());
  return out;
}

template <class T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const noexcept { Free(p); }
};

/// A string the library allocated, copied and freed (lance_string_free).
inline std::string take_string(char* p) {
  std::string s(p ? p : "");
  lance_string_free(p);
  return s;
}

/// Bytes the library allocated, copied and freed (lance_bytes_free).
inline std::vector<uint8_t> take_bytes(uint8_t* b, size_t n) {
  std::vector<uint8_t> out(b, b + n);
  lance_bytes_free(b, n);
  return out;
}

inline LanceIoStats io_stats() {
  LanceIoStats s{};
  s.struct_size = sizeof s;
  return s;
}
}  // namespace detail

/// One batch of a stream: an Arrow C Data struct array (children = columns) plus the stream's
/// schema. Owns the array; released on destruction.
class Batch {
 public:
  Batch(ArrowArray array, std::shared_ptr<ArrowSchema> schema) : array_(array), schema_(std::move(schema)) {}
  Batch(Batch&& o) noexcept : array_(o.array_), schema_(std::move(o.schema_)) { o.array_.release = nullptr; }
  Batch& operator=(Batch&& o) noexcept {
    if (this != &o) {
      reset();
      array_ = o.array_;
      schema_ = std::move(o.schema_);
      o.array_.release = nullptr;
    }
    return *this;
  }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  ~Batch() { reset(); }

  int64_t num_rows() const { return array_.length; }
  const ArrowArray& array() const { return array_; }
  const ArrowSchema& schema() const { return *schema_; }
  /// Index of the column named `name`, or -1.
  int64_t column_index(const std::string& name) const {
    for (int64_t i = 0; i < schema_->n_children; i++)
      if (name == schema_->children[i]->name) return i;
    return -1;
  }
  /// The values of a primitive column, offset applied. Checked: `column` must exist (not -1
  /// from `column_index`) and its Arrow type must be T's (int8 "c" ... uint64 "L", float "f",
  /// double "g"); otherwise Error(LANCE_ERR_INVALID_ARGUMENT). Values of null rows are
  /// undefined: ask `is_null`.
  template <class T>
  const T* values(int64_t column) const {
    const ArrowArray* c = child(column);
    const char* want = format_of<T>();
    const char* have = schema_->children[column]->format;
    if (want == nullptr || std::string(have) != want)
      throw Error(LANCE_ERR_INVALID_ARGUMENT, std::string("LANCE_ERR_INVALID_ARGUMENT: column '") +
                                                  schema_->children[column]->name + "' has Arrow type '" + have +
                                                  "', not the type asked for");
    return static_cast<const T*>(c->buffers[1]) + c->offset;
  }
  /// The values of the column named `name` (checked as `values`).
  template <class T>
  const T* values(const std::string& name) const {
    return values<T>(column_index(name));
  }
  /// The text of row `row` of a utf8 ("u") or large utf8 ("U") column, a view into the batch
  /// (valid while the batch lives). Checked: the column must exist and be text, the row in
  /// range; otherwise Error(LANCE_ERR_INVALID_ARGUMENT). A null row's text is empty: ask `is_null`.
  std::string_view text(int64_t column, int64_t row) const {
    const ArrowArray* c = checked_row(column, row);
    const std::string have = schema_->children[column]->format;
    if ((have != "u" && have != "U") || c->n_buffers < 3) throw wrong_type(column, "text");
    const int64_t i = c->offset + row;
    const char* data = static_cast<const char*>(c->buffers[2]);
    if (have == "u") {
      const int32_t* off = static_cast<const int32_t*>(c->buffers[1]);
      return std::string_view(data + off[i], static_cast<size_t>(off[i + 1] - off[i]));
    }
    const int64_t* off = static_cast<const int64_t*>(c->buffers[1]);
    return std::string_view(data + off[i], static_cast<size_t>(off[i + 1] - off[i]));
  }
  /// `text` of the column named `name`.
  std::string_view text(const std::string& name, int64_t row) const { return text(column_index(name), row); }
  /// The items of row `row` of a fixed-size list column ("+w:N", e.g. a vector) whose items
  /// have T's Arrow type, and their number N. Checked like `text`.
  template <class T>
  std::pair<const T*, int32_t> fixed_size_list(int64_t column, int64_t row) const {
    const ArrowArray* c = checked_row(column, row);
    const ArrowSchema* f = schema_->children[column];
    const char* want = format_of<T>();
    if (std::strncmp(f->format, "+w:", 3) != 0 || f->n_children != 1 || want == nullptr ||
        std::string(f->children[0]->format) != want || c->n_children != 1)
      throw wrong_type(column, "fixed-size list");
    const int32_t n = static_cast<int32_t>(std::strtol(f->format + 3, nullptr, 10));
    const ArrowArray* items = c->children[0];
    const T* base = static_cast<const T*>(items->buffers[1]) + items->offset;
    return {base + (c->offset + row) * n, n};
  }
  /// `fixed_size_list` of the column named `name`.
  template <class T>
  std::pair<const T*, int32_t> fixed_size_list(const std::string& name, int64_t row) const {
    return fixed_size_list<T>(column_index(name), row);
  }
  /// Whether row `row` of `column` is null (checked like `values`).
  bool is_null(int64_t column, int64_t row) const {
    const ArrowArray* c = child(column);
    if (row < 0 || row >= c->length)
      throw Error(LANCE_ERR_INVALID_ARGUMENT, "LANCE_ERR_INVALID_ARGUMENT: row " + std::to_string(row) + " is out of range");
    if (c->null_count == 0 || c->n_buffers == 0 || c->buffers[0] == nullptr) return false;
    const int64_t i = c->offset + row;
    return ((static_cast<const uint8_t*>(c->buffers[0])[i >> 3] >> (i & 7)) & 1) == 0;
  }

 private:
  void reset() noexcept {
    if (array_.release) array_.release(&array_);
  }
  const ArrowArray* checked_row(int64_t column, int64_t row) const {
    const ArrowArray* c = child(column);
    if (row < 0 || row >= c->length)
      throw Error(LANCE_ERR_INVALID_ARGUMENT, "LANCE_ERR_INVALID_ARGUMENT: row " + std::to_string(row) + " is out of range");
    return c;
  }
  Error wrong_type(int64_t column, const char* asked) const {
    return Error(LANCE_ERR_INVALID_ARGUMENT, std::string("LANCE_ERR_INVALID_ARGUMENT: column '") +
                                                 schema_->children[column]->name + "' has Arrow type '" +
                                                 schema_->children[column]->format + "', not " + asked);
  }
  const ArrowArray* child(int64_t column) const {
    if (column < 0 || column >= array_.n_children)
      throw Error(LANCE_ERR_INVALID_ARGUMENT,
                  "LANCE_ERR_INVALID_ARGUMENT: column index " + std::to_string(column) + " does not exist");
    return array_.children[column];
  }
  template <class T>
  static const char* format_of() {
    if constexpr (std::is_same_v<T, int8_t>) return "c";
    else if constexpr (std::is_same_v<T, uint8_t>) return "C";
    else if constexpr (std::is_same_v<T, int16_t>) return "s";
    else if constexpr (std::is_same_v<T, uint16_t>) return "S";
    else if constexpr (std::is_same_v<T, int32_t>) return "i";
    else if constexpr (std::is_same_v<T, uint32_t>) return "I";
    else if constexpr (std::is_same_v<T, int64_t>) return "l";
    else if constexpr (std::is_same_v<T, uint64_t>) return "L";
    else if constexpr (std::is_same_v<T, float>) return "f";
    else if constexpr (std::is_same_v<T, double>) return "g";
    else return nullptr;
  }
  ArrowArray array_;
  std::shared_ptr<ArrowSchema> schema_;
};

/// An owned ArrowArrayStream of this library, iterable with range-for.
class Stream {
 public:
  Stream() { stream_.release = nullptr; }
  explicit Stream(ArrowArrayStream s) : stream_(s) {}
  Stream(Stream&& o) noexcept : stream_(o.stream_), schema_(std::move(o.schema_)) { o.stream_.release = nullptr; }
  Stream& operator=(Stream&& o) noexcept {
    if (this != &o) {
      reset();
      stream_ = o.stream_;
      schema_ = std::move(o.schema_);
      o.stream_.release = nullptr;
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() { reset(); }

  ArrowArrayStream* raw() { return &stream_; }
  /// Give up ownership (e.g. to hand the stream to lance_topk_merge).
  ArrowArrayStream release() {
    ArrowArrayStream s = stream_;
    stream_.release = nullptr;
    return s;
  }

  const ArrowSchema& schema() {
    if (!schema_) {
      auto s = std::shared_ptr<ArrowSchema>(new ArrowSchema(), [](ArrowSchema* p) {
        if (p->release) p->release(p);
        delete p;
      });
      int rc = stream_.get_schema(&stream_, s.get());
      if (rc != 0) throw Error::from_stream(rc, stream_.get_last_error(&stream_));
      schema_ = s;
    }
    return *schema_;
  }

  /// The next batch, or nullopt at the end. Throws Error(errno, message) on failure.
  std::optional<Batch> next() {
    schema();
    ArrowArray a;
    int rc = stream_.get_next(&stream_, &a);
    if (rc != 0) throw Error::from_stream(rc, stream_.get_last_error(&stream_));
    if (a.release == nullptr) return std::nullopt;
    return Batch(a, schema_);
  }

  /// What `poll` found.
  enum class PollState { Ready, Pending, End };
  struct Polled {
    PollState state;
    std::optional<Batch> batch;  ///< set when state == Ready
  };
  /// Non-blocking `next` (lance_stream_poll_next): Ready with the batch, Pending (then
  /// `wake(user_data)` runs once, on a library thread, when polling again may progress; it must
  /// not call into the stream) or End (polling again throws LANCE_ERR_FAILED_PRECONDITION).
  /// Throws Error(code, message) for a failed, cancelled or timed-out stream. Do not mix with
  /// a concurrent `next()` on the same stream.
  Polled poll(LanceWakeCallback wake = nullptr, void* user_data = nullptr) {
    schema();
    ArrowArray a;
    int32_t status = -1;
    check(lance_stream_poll_next(&stream_, &a, wake, user_data, &status));
    if (status == LANCE_POLL_READY) return Polled{PollState::Ready, Batch(a, schema_)};
    return Polled{status == LANCE_POLL_PENDING ? PollState::Pending : PollState::End, std::nullopt};
  }

  /// Cancel from any thread; the consumer's next() then throws Error(ECANCELED).
  void cancel() const { check(lance_stream_cancel(&stream_)); }

  LanceIoStats io_stats() const {
    LanceIoStats s{};
    s.struct_size = sizeof s;
    check(lance_stream_io_stats_v2(&stream_, &s));
    return s;
  }

  class iterator {
   public:
    explicit iterator(Stream* s) : s_(s) { advance(); }
    iterator() = default;
    Batch& operator*() { return *current_; }
    iterator& operator++() {
      advance();
      return *this;
    }
    bool operator!=(const iterator& o) const { return s_ != o.s_; }

   private:
    void advance() {
      current_ = s_->next();
      if (!current_) s_ = nullptr;
    }
    Stream* s_ = nullptr;
    std::optional<Batch> current_;
  };
  iterator begin() { return iterator(this); }
  iterator end() { return iterator(); }

 private:
  void reset() noexcept {
    if (stream_.release) stream_.release(&stream_);
  }
  ArrowArrayStream stream_;
  std::shared_ptr<ArrowSchema> schema_;
};

/// Settings of the process-wide session: the library's defaults, changed field by field, then
/// `configure()` before the first call that uses the session.
struct SessionOptions {
  LanceSessionOptions raw;
  SessionOptions() { check(lance_session_options_default_v2(&raw, sizeof raw)); }
  /// Data cache of object-store reads: memory tier, block size, optional disk tier.
  SessionOptions& data_cache(uint64_t memory_bytes, uint64_t block_bytes = 0) {
    raw.data_cache_memory_bytes = memory_bytes;
    raw.data_cache_block_bytes = block_bytes;
    return *this;
  }
  /// Disk tier in `dir` (kept by this object) with a budget of `bytes` (0 = 1 GiB).
  SessionOptions& data_cache_disk(const std::string& dir, uint64_t bytes) {
    dir_ = dir;
    raw.data_cache_disk_bytes = bytes;
    return *this;
  }
  SessionOptions& no_data_cache() {
    raw.data_cache_disabled = 1;
    return *this;
  }
  /// Apply (throws Error with LANCE_ERR_FAILED_PRECONDITION after first use).
  void configure() const {
    LanceSessionOptions o = raw;
    o.data_cache_disk_dir = dir_.empty() ? nullptr : dir_.c_str();
    check(lance_session_configure_v2(&o));
  }

 private:
  std::string dir_;
};

/// Cache figures of the process-wide session (index, metadata and data cache).
inline LanceSessionStats session_stats() {
  LanceSessionStats s{};
  s.struct_size = sizeof s;
  check(lance_session_stats_v2(&s));
  return s;
}

/// Wait until the data cache's disk tier holds every block read so far (before a shutdown).
inline void flush_data_cache() { check(lance_session_flush_data_cache()); }

/// An aggregate query (lance_dataset_aggregate, lance_dataset_aggregate_split): group-by
/// columns, aggregates, an optional Lance SQL filter. Since 0.12.
struct AggregateQuery {
  struct Item {
    LanceAggregateFunction function;
    std::string column;      ///< empty for COUNT(*) and for an expression
    std::string alias;       ///< empty = the default name (`sum(col)`, `count(*)`, ...)
    std::string expression;  ///< a Lance SQL expression aggregated instead of a column (since 0.15)
  };
  std::vector<std::string> group_by;
  /// Lance SQL expressions grouped by instead of a column, by position in `group_by` (shorter,
  /// or an empty entry: that key is the column `group_by` names). Since 0.15.
  std::vector<std::string> group_by_expressions;
  std::vector<Item> aggregates;
  std::optional<std::string> filter;
  /// A serialized Substrait `Plan` saying the whole query (LanceAggregateSpec.substrait_plan):
  /// when not empty, `group_by`, `aggregates` and `filter` must be. Since 0.15.
  std::vector<uint8_t> substrait_plan;

  /// The query a serialized Substrait plan says (its root an `AggregateRel`). Since 0.15.
  static AggregateQuery from_substrait(std::vector<uint8_t> plan) {
    AggregateQuery q;
    q.substrait_plan = std::move(plan);
    return q;
  }

  /// Group by a Lance SQL expression of the row (`"date_part('year', d)"`), its result column
  /// named `name`; integer arithmetic inside it is refused (LANCE_ERR_NOT_SUPPORTED). Since 0.15.
  AggregateQuery& group_by_expression(std::string name, std::string expression) {
    group_by_expressions.resize(group_by.size());
    group_by.push_back(std::move(name));
    group_by_expressions.push_back(std::move(expression));
    return *this;
  }

  AggregateQuery& count_star(std::string alias = {}) {
    aggregates.push_back({LANCE_AGG_COUNT_STAR, {}, std::move(alias), {}});
    return *this;
  }
  AggregateQuery& add(LanceAggregateFunction f, std::string column, std::string alias = {}) {
    aggregates.push_back({f, std::move(column), std::move(alias), {}});
    return *this;
  }
  /// `f` over a Lance SQL expression of the row (`"l_extendedprice * (1 - l_discount)"`);
  /// integer arithmetic inside it is refused (LANCE_ERR_NOT_SUPPORTED). Since 0.15.
  AggregateQuery& add_expression(LanceAggregateFunction f, std::string expression, std::string alias = {}) {
    aggregates.push_back({f, {}, std::move(alias), std::move(expression)});
    return *this;
  }
};

namespace detail {
/// A LanceAggregateSpec over an AggregateQuery's strings (valid while both live).
struct AggregateSpec {
  explicit AggregateSpec(const AggregateQuery& q) {
    check(lance_aggregate_init_v2(&spec, sizeof spec));
    for (const auto& g : q.group_by) group_by.push_back(g.c_str());
    bool any_key_expression = false;
    for (size_t i = 0; i < q.group_by.size(); ++i) {
      bool has = i < q.group_by_expressions.size() && !q.group_by_expressions[i].empty();
      group_by_expressions.push_back(has ? q.group_by_expressions[i].c_str() : nullptr);
      any_key_expression = any_key_expression || has;
    }
    for (const auto& a : q.aggregates) {
      functions.push_back(static_cast<int32_t>(a.function));
      columns.push_back(a.column.empty() ? nullptr : a.column.c_str());
      aliases.push_back(a.alias.empty() ? nullptr : a.alias.c_str());
      expressions.push_back(a.expression.empty() ? nullptr : a.expression.c_str());
      any_expression = any_expression || !a.expression.empty();
    }
    spec.group_by = group_by.empty() ? nullptr : group_by.data();
    spec.num_group_by = group_by.size();
    spec.functions = functions.empty() ? nullptr : functions.data();
    spec.columns = columns.empty() ? nullptr : columns.data();
    spec.aliases = aliases.empty() ? nullptr : aliases.data();
    spec.num_aggregates = functions.size();
    spec.filter_sql = q.filter ? q.filter->c_str() : nullptr;
    spec.expressions = any_expression ? expressions.data() : nullptr;
    spec.group_by_expressions = any_key_expression ? group_by_expressions.data() : nullptr;
    spec.substrait_plan = q.substrait_plan.empty() ? nullptr : q.substrait_plan.data();
    spec.substrait_plan_len = q.substrait_plan.size();
  }
  LanceAggregateSpec spec;
  std::vector<const char*> group_by, group_by_expressions, columns, aliases, expressions;
  bool any_expression = false;
  std::vector<int32_t> functions;
};
}  // namespace detail

class Dataset;

/// One unit of distributed work.
class Split {
 public:
  explicit Split(LanceSplit* p) : p_(check_ptr(p)) {}
  static Split deserialize(const std::vector<uint8_t>& bytes) { return deserialize(bytes.data(), bytes.size()); }
  /// From bytes anywhere (a received message buffer): no copy is made.
  static Split deserialize(const uint8_t* bytes, size_t len) { return Split(lance_split_deserialize(bytes, len)); }
  std::vector<uint8_t> serialize() const {
    uint8_t* b = nullptr;
    size_t n = 0;
    check(lance_split_serialize(p_.get(), &b, &n));
    std::vector<uint8_t> out(b, b + n);
    lance_bytes_free(b, n);
    return out;
  }
  LanceSplitKind kind() const { return static_cast<LanceSplitKind>(lance_split_kind(p_.get())); }
  std::string uri() const { return lance_split_uri(p_.get()); }
  /// The index segment's UUID for a segment split; nullopt for splits without one. Throws for a
  /// combined split of several segments (see segment_uuids()).
  std::optional<std::array<uint8_t, 16>> segment_uuid() const {
    std::array<uint8_t, 16> u{};
    int32_t rc = lance_split_segment_uuid(p_.get(), u.data());
    if (rc == LANCE_ERR_NOT_FOUND) return std::nullopt;
    check(rc);
    return u;
  }
  /// The UUIDs of every index segment the split searches (none for scan and flat splits).
  std::vector<std::array<uint8_t, 16>> segment_uuids() const {
    size_t n = 0;
    const uint8_t* b = lance_split_segment_uuids(p_.get(), &n);
    std::vector<std::array<uint8_t, 16>> out(n);
    for (size_t i = 0; i < n; ++i) std::memcpy(out[i].data(), b + 16 * i, 16);
    return out;
  }
  /// One split doing the work of `splits` (one plan, one kind) in a single call
  /// (lance_splits_combine); throws lance::Error naming a split that does not fit.
  static Split combine(const std::vector<const Split*>& splits) {
    std::vector<const LanceSplit*> ptrs;
    ptrs.reserve(splits.size());
    for (const Split* s : splits) ptrs.push_back(s ? s->get() : nullptr);
    LanceSplit* out = nullptr;
    check(lance_splits_combine(ptrs.data(), ptrs.size(), &out));
    return Split(out);
  }
  static Split combine(const std::vector<Split>& splits) {
    std::vector<const Split*> ptrs;
    ptrs.reserve(splits.size());
    for (const Split& s : splits) ptrs.push_back(&s);
    return combine(ptrs);
  }
  /// Open the split's table at exactly its version (defined after Dataset).
  Dataset open_dataset(const std::map<std::string, std::string>& storage_options = {}) const;
  uint64_t row_count() const { return lance_split_row_count(p_.get()); }
  /// For a scan split of part of one fragment (a plan_scan target below the fragment's rows):
  /// {offset, count} of the physical rows it covers; nullopt for a split of whole fragments.
  std::optional<std::pair<uint64_t, uint64_t>> row_slice() const {
    uint64_t offset = 0, count = 0;
    int32_t rc = lance_split_row_slice(p_.get(), &offset, &count);
    if (rc < 0) throw Error::last();
    if (rc == 0) return std::nullopt;
    return std::make_pair(offset, count);
  }
  uint64_t version() const { return lance_split_version(p_.get()); }
  std::vector<uint64_t> fragment_ids() const {
    size_t n = 0;
    const uint64_t* ids = lance_split_fragment_ids(p_.get(), &n);
    return std::vector<uint64_t>(ids, ids + n);
  }
  const LanceSplit* get() const { return p_.get(); }
  /// Give up ownership (free with lance_split_free).
  LanceSplit* release() { return p_.release(); }

 private:
  std::unique_ptr<LanceSplit, detail::Deleter<LanceSplit, lance_split_free>> p_;
};

/// Splits of a pinned snapshot.
class SplitPlan {
 public:
  explicit SplitPlan(LanceSplitPlan* p) : p_(check_ptr(p)) {}
  const LanceSplitPlan* get() const { return p_.get(); }
  /// Give up ownership (free with lance_split_plan_free).
  LanceSplitPlan* release() { return p_.release(); }
  size_t size() const { return lance_split_plan_count(p_.get()); }
  /// An owned copy of split `i`.
  Split at(size_t i) const { return Split(lance_split_plan_get(p_.get(), i)); }
  std::optional<std::string> index_name() const {
    const char* n = lance_split_plan_index_name(p_.get());
    return n ? std::optional<std::string>(n) : std::nullopt;
  }
  std::string reason() const { return lance_split_plan_reason(p_.get()); }

 private:
  std::unique_ptr<LanceSplitPlan, detail::Deleter<LanceSplitPlan, lance_split_plan_free>> p_;
};

/// What a scan reads; columns empty = all.
struct ScanRequest {
  std::vector<std::string> columns;
  std::optional<std::string> filter;
  int64_t limit = -1;
  int64_t offset = 0;
  uint64_t batch_size = 0;
  bool with_row_id = false;
  std::vector<uint64_t> fragment_ids;
  /// Sort keys ("price DESC, id"): the rows (of the scan or of each split) sorted before offset
  /// and limit; unset = storage order. Since 0.13.
  std::optional<std::string> order_by;
  /// A dynamic filter (`DynamicFilter::get()`), tightened while the scan runs; borrowed for the
  /// call (the stream keeps its own reference). No limit or offset with one. Since 0.15.
  const LanceDynamicFilter* dynamic_filter = nullptr;
};

/// Settings of a write, a staged write, a commit or a delete (LanceWriteParams); unset =
/// Lance's default.
struct WriteRequest {
  LanceWriteMode mode = LANCE_WRITE_CREATE;
  uint64_t max_rows_per_file = 0;
  uint64_t max_rows_per_group = 0;
  uint64_t max_bytes_per_file = 0;
  std::optional<std::string> storage_version;  ///< "2.0", "2.1", "stable", ... (new tables)
  std::map<std::string, std::string> storage_options;
  std::optional<std::string> commit_message;
  std::map<std::string, std::string> transaction_properties;
  std::optional<std::string> statement_id;  ///< exactly-once key of a commit
  int32_t commit_retries = 0;               ///< 0 = Lance's default, negative = none
  uint64_t retry_timeout_ms = 0;
  /// The commit lands only on this version (0 = any): else LANCE_ERR_CONFLICT. Since 0.14.
  uint64_t expected_version = 0;
  /// Config values the version the commit lands on must hold (a fencing token): else
  /// LANCE_ERR_FAILED_PRECONDITION. Since 0.14.
  std::map<std::string, std::string> required_config;
  /// A new table keeps stable row ids (and the row versions change data needs). Since 0.14.
  bool stable_row_ids = false;
};

/// What `Dataset::cleanup` removed.
struct CleanupResult {
  uint64_t versions_removed = 0;
  uint64_t bytes_removed = 0;
};

/// One worker's uncommitted share of a write: the staged-write bytes to ship to the
/// coordinator and what the worker wrote.
struct StagedWrite {
  std::vector<uint8_t> bytes;
  LanceWriteResult result;
};

/// Settings of a vector index (LanceVectorIndexParams); 0 = Lance's default.
struct VectorIndexRequest {
  LanceVectorIndexType index_type = LANCE_VECTOR_INDEX_IVF_PQ;
  LanceMetric metric = LANCE_METRIC_DEFAULT;
  uint32_t num_partitions = 0;
  uint32_t num_sub_vectors = 0;
  uint32_t num_bits = 0;
  uint32_t sample_rate = 0;
  uint32_t max_iterations = 0;
  uint32_t hnsw_m = 0;
  uint32_t hnsw_ef_construction = 0;
};

/// Settings of a full-text index (LanceInvertedIndexParams); the defaults are Lance's.
struct InvertedIndexRequest {
  std::string base_tokenizer = "simple";
  std::string language = "English";
  bool with_position = false;
  uint32_t max_token_length = 40;  ///< 0 = unlimited
  bool lower_case = true;
  bool stem = true;
  bool remove_stop_words = true;
  bool ascii_folding = true;
};

/// How a distributed index build is cut (LanceIndexBuildPlanParams).
struct IndexBuildPlan {
  uint32_t num_splits = 0;      ///< 0 = one split per fragment
  bool unindexed_only = false;  ///< only the fragments the index does not cover yet
};

/// Settings of a compaction (LanceCompactParams); 0 = Lance's default.
struct CompactRequest {
  uint64_t target_rows_per_fragment = 0;
  uint64_t max_rows_per_group = 0;
  float deletion_threshold = 0.0f;  ///< share of deleted rows that triggers a rewrite, (0, 1]
  bool keep_deletions = false;
};

/// A merge-insert statement (LanceMergeInsert): key columns and what happens to matched rows,
/// unmatched source rows and unmatched target rows.
struct MergeRequest {
  std::vector<std::string> on;
  LanceWhenMatched when_matched = LANCE_WHEN_MATCHED_DO_NOTHING;
  std::optional<std::string> when_matched_condition;  ///< for LANCE_WHEN_MATCHED_UPDATE_IF
  LanceWhenNotMatched when_not_matched = LANCE_WHEN_NOT_MATCHED_INSERT;
  LanceWhenNotMatchedBySource when_not_matched_by_source = LANCE_WHEN_NOT_MATCHED_BY_SOURCE_KEEP;
  std::optional<std::string> by_source_condition;  ///< for ..._BY_SOURCE_DELETE_IF
};

namespace detail {
/// Pointer and length arrays over byte strings (borrowed).
struct ByteArrays {
  explicit ByteArrays(const std::vector<std::vector<uint8_t>>& v) {
    for (const auto& b : v) {
      ptrs.push_back(b.data());
      lens.push_back(b.size());
    }
  }
  std::vector<const uint8_t*> ptrs;
  std::vector<size_t> lens;
};

inline LanceCompactParams compact_params(const CompactRequest& r) {
  LanceCompactParams p;
  check(lance_compact_params_init_v2(&p, sizeof p));
  p.target_rows_per_fragment = r.target_rows_per_fragment;
  p.max_rows_per_group = r.max_rows_per_group;
  p.deletion_threshold = r.deletion_threshold;
  p.keep_deletions = r.keep_deletions ? 1 : 0;
  return p;
}

/// The byte strings of a LanceBytesList, which this frees.
inline std::vector<std::vector<uint8_t>> take_list(LanceBytesList* l) {
  std::unique_ptr<LanceBytesList, Deleter<LanceBytesList, lance_bytes_list_free>> guard(l);
  std::vector<std::vector<uint8_t>> items;
  for (size_t i = 0; i < lance_bytes_list_count(l); i++) {
    size_t n = 0;
    const uint8_t* b = check_ptr(lance_bytes_list_get(l, i, &n));
    items.emplace_back(b, b + n);
  }
  return items;
}

inline LanceVectorIndexParams vector_index_params(const VectorIndexRequest& r) {
  LanceVectorIndexParams p;
  check(lance_vector_index_params_init_v2(&p, sizeof p));
  p.index_type = r.index_type;
  p.metric = r.metric;
  p.num_partitions = r.num_partitions;
  p.num_sub_vectors = r.num_sub_vectors;
  p.num_bits = r.num_bits;
  p.sample_rate = r.sample_rate;
  p.max_iterations = r.max_iterations;
  p.hnsw_m = r.hnsw_m;
  p.hnsw_ef_construction = r.hnsw_ef_construction;
  return p;
}

/// Points into `r`'s strings: `r` must outlive the result's use.
inline LanceInvertedIndexParams inverted_index_params(const InvertedIndexRequest& r) {
  LanceInvertedIndexParams p;
  check(lance_inverted_index_params_init_v2(&p, sizeof p));
  p.base_tokenizer = r.base_tokenizer.c_str();
  p.language = r.language.c_str();
  p.with_position = r.with_position ? 1 : 0;
  p.max_token_length = r.max_token_length;
  p.lower_case = r.lower_case ? 1 : 0;
  p.stem = r.stem ? 1 : 0;
  p.remove_stop_words = r.remove_stop_words ? 1 : 0;
  p.ascii_folding = r.ascii_folding ? 1 : 0;
  return p;
}

inline LanceIndexBuildPlanParams plan_params(const IndexBuildPlan& r) {
  LanceIndexBuildPlanParams p;
  check(lance_index_build_plan_params_init_v2(&p, sizeof p));
  p.num_splits = r.num_splits;
  p.unindexed_only = r.unindexed_only ? 1 : 0;
  return p;
}

inline LanceCompactResult compact_result() {
  LanceCompactResult res{};
  res.struct_size = sizeof res;
  return res;
}

/// LanceWriteParams of a WriteRequest, with the key/value arrays they point into.
class WriteParams {
 public:
  explicit WriteParams(const WriteRequest& r)
      : storage_(r.storage_options), props_(r.transaction_properties), required_(r.required_config) {
    check(lance_write_params_init_v2(&p_, sizeof p_));
    p_.mode = r.mode;
    p_.commit_retries = r.commit_retries;
    p_.max_rows_per_file = r.max_rows_per_file;
    p_.max_rows_per_group = r.max_rows_per_group;
    p_.max_bytes_per_file = r.max_bytes_per_file;
    p_.storage_version = r.storage_version ? r.storage_version->c_str() : nullptr;
    p_.storage_options = storage_.get();
    p_.commit_message = r.commit_message ? r.commit_message->c_str() : nullptr;
    p_.transaction_properties = props_.get();
    p_.statement_id = r.statement_id ? r.statement_id->c_str() : nullptr;
    p_.retry_timeout_ms = r.retry_timeout_ms;
    p_.expected_version = r.expected_version;
    p_.required_config = required_.get();
    p_.stable_row_ids = r.stable_row_ids ? 1 : 0;
  }
  const LanceWriteParams* get() const { return &p_; }

 private:
  KeyValues storage_, props_, required_;
  LanceWriteParams p_;
};

inline LanceWriteResult write_result() {
  LanceWriteResult r{};
  r.struct_size = sizeof r;
  return r;
}
}  // namespace detail

/// A vector query against one split.
struct SearchRequest {
  std::string column;
  std::vector<float> vector;
  uint64_t k = 10;
  LanceMetric metric = LANCE_METRIC_DEFAULT;
  uint32_t nprobes = 0;
  uint32_t refine_factor = 0;
  std::optional<std::string> prefilter;
  std::vector<std::string> columns;
  bool with_row_id = true;
  bool defer_refine = false;  ///< index segments return k * refine_factor approximate candidates
  std::optional<float> distance_lower;  ///< keep lower <= _distance (exact)
  std::optional<float> distance_upper;  ///< keep _distance < upper (exact)
  /// Batch search: `vector` holds this many query vectors one after the other; the output has
  /// `query_index` and `merge` keeps k per query.
  uint64_t num_queries = 1;
};

/// A full-text query against one split (and the statistics computed for it).
struct TextSearchRequest {
  std::string column;
  std::string text;
  LanceTextMatch match = LANCE_TEXT_MATCH_ANY;
  uint32_t slop = 0;  ///< phrase queries only
  uint64_t k = 10;
  std::optional<std::string> prefilter;
  std::vector<std::string> columns;
  bool with_row_id = true;
};

namespace detail {
/// The C query of `r`; `cols` must outlive it.
inline LanceTextQuery text_query(const TextSearchRequest& r, const std::vector<const char*>& cols) {
  LanceTextQuery q;
  check(lance_text_query_init(&q, sizeof(LanceTextQuery)));
  q.column = r.column.c_str();
  q.text = r.text.c_str();
  q.match_kind = r.match;
  q.slop = r.slop;
  q.k = r.k;
  q.prefilter_sql = r.prefilter ? r.prefilter->c_str() : nullptr;
  q.columns = cols.data();
  q.num_columns = cols.size();
  q.with_row_id = r.with_row_id;
  return q;
}
}  // namespace detail

/// A table pinned at one version.
/// The blobs of some rows of one blob column (`Dataset::take_blobs`), in request order:
/// `info(i)` describes blob i, `read(i, offset, length)` reads a byte range of it without
/// reading the rest. Reads may run on several threads at once; outlives its Dataset.
class Blobs {
 public:
  explicit Blobs(LanceBlobs* p) : p_(check_ptr(p)) {}
  size_t size() const { return lance_blobs_count(p_.get()); }
  /// Row id, size, kind (LanceBlobKind), null-ness and, for external blobs, the URI (owned by
  /// this object).
  LanceBlobInfo info(size_t i) const {
    LanceBlobInfo out{};
    out.struct_size = sizeof out;
    check(lance_blobs_info(p_.get(), i, &out));
    return out;
  }
  /// Bytes offset .. offset + length of blob i; throws LANCE_ERR_INVALID_ARGUMENT past its end.
  std::vector<uint8_t> read(size_t i, uint64_t offset, uint64_t length) const {
    uint8_t* b = nullptr;
    size_t n = 0;
    check(lance_blobs_read_alloc(p_.get(), i, offset, length, &b, &n));
    return detail::take_bytes(b, n);
  }
  /// Fill `length` bytes of caller memory at `buf` from blob i at `offset`.
  void read_into(size_t i, uint64_t offset, uint8_t* buf, size_t length) const {
    check(lance_blobs_read(p_.get(), i, offset, length, buf, length));
  }
  /// The I/O of the take and every read so far.
  LanceIoStats io_stats() const {
    LanceIoStats s = detail::io_stats();
    check(lance_blobs_io_stats(p_.get(), &s));
    return s;
  }

 private:
  std::unique_ptr<LanceBlobs, detail::Deleter<LanceBlobs, lance_blobs_free>> p_;
};

class Dataset {
 public:
  static Dataset open(const std::string& uri, const std::map<std::string, std::string>& storage_options = {},
                      uint64_t version = 0) {
    detail::KeyValues kv(storage_options);
    return Dataset(lance_dataset_open(uri.c_str(), kv.get(), version));
  }
  explicit Dataset(LanceDataset* p) : p_(check_ptr(p)) {}

  uint64_t version() const { return lance_dataset_version(p_.get()); }
  std::string uri() const { return lance_dataset_uri(p_.get()); }
  uint64_t count_rows(const std::optional<std::string>& filter = std::nullopt) const {
    uint64_t n = 0;
    check(lance_dataset_count_rows_where_v2(p_.get(), filter ? filter->c_str() : nullptr, &n, nullptr));
    return n;
  }
  SplitPlan plan_scan(uint64_t target_rows = 0) const {
    LanceSplitPlan* p = nullptr;
    check(lance_dataset_plan_scan(p_.get(), target_rows, &p));
    return SplitPlan(p);
  }
  /// Splits of the rows changed after `since_version` up to this version
  /// (lance_dataset_plan_changes); `change_types` are LanceChangeType bits (0 = all). Read each
  /// with `scan_split`. Since 0.14.
  SplitPlan plan_changes(uint64_t since_version, uint32_t change_types = 0, uint64_t target_rows = 0) const {
    LanceChangesParams params;
    check(lance_changes_params_init_v2(&params, sizeof params));
    params.since_version = since_version;
    params.change_types = change_types;
    params.target_rows = target_rows;
    LanceSplitPlan* p = nullptr;
    check(lance_dataset_plan_changes(p_.get(), &params, &p));
    return SplitPlan(p);
  }
  /// plan_scan, and fragments of more than target_rows rows cut into row slices
  /// (lance_dataset_plan_scan_slices; Split::row_slice).
  SplitPlan plan_scan_slices(uint64_t target_rows) const {
    LanceSplitPlan* p = nullptr;
    check(lance_dataset_plan_scan_slices(p_.get(), target_rows, &p));
    return SplitPlan(p);
  }
  SplitPlan plan_vector_search(const std::string& column, LanceMetric metric = LANCE_METRIC_DEFAULT,
                               bool use_index = true, uint64_t flat_target_rows = 0) const {
    LanceSplitPlan* p = nullptr;
    check(lance_dataset_plan_vector_search(p_.get(), column.c_str(), metric, use_index, flat_target_rows, &p));
    return SplitPlan(p);
  }
  Stream scan(const ScanRequest& r = {}) const {
    auto cols = detail::c_strings(r.columns);
    LanceScanOptions o = scan_options(r, cols);
    ArrowArrayStream s;
    check(lance_dataset_scan_v2(p_.get(), &o, &s));
    return Stream(s);
  }
  /// One scan split (from `plan_scan`, possibly deserialized on a worker) with the request's
  /// options (columns, filter, limit, offset, batch size, row ids); `fragment_ids` must stay
  /// empty: the split chooses the fragments (LANCE_ERR_INVALID_ARGUMENT otherwise).
  Stream scan(const Split& split, const ScanRequest& r = {}) const {
    auto cols = detail::c_strings(r.columns);
    LanceScanOptions o = scan_options(r, cols);
    ArrowArrayStream s;
    check(lance_split_scan_v2(p_.get(), split.get(), &o, &s));
    return Stream(s);
  }
  Stream search(const Split& split, const SearchRequest& r) const {
    auto cols = detail::c_strings(r.columns);
    LanceVectorQuery q = vector_query(r, cols);
    ArrowArrayStream s;
    check(lance_split_search_v2(p_.get(), split.get(), &q, &s));
    return Stream(s);
  }
  Stream take(const std::vector<uint64_t>& row_ids, const std::vector<std::string>& columns = {}) const {
    auto cols = detail::c_strings(columns);
    ArrowArrayStream s;
    check(lance_dataset_take_rows(p_.get(), row_ids.data(), row_ids.size(), cols.data(), cols.size(), &s));
    return Stream(s);
  }
  /// The blobs of blob column `column` for `row_ids` (descriptors only; read with Blobs).
  Blobs take_blobs(const std::string& column, const std::vector<uint64_t>& row_ids) const {
    LanceBlobs* b = nullptr;
    check(lance_dataset_take_blobs(p_.get(), column.c_str(), row_ids.data(), row_ids.size(), &b));
    return Blobs(b);
  }
  /// Full-text splits of `column` (one per INVERTED segment plus flat splits).
  SplitPlan plan_fts(const std::string& column, uint64_t flat_target_rows = 0) const {
    LanceSplitPlan* p = nullptr;
    check(lance_dataset_plan_fts(p_.get(), column.c_str(), flat_target_rows, &p));
    return SplitPlan(p);
  }
  /// The corpus statistics of `r` over the whole snapshot, as bytes to ship with each split.
  std::vector<uint8_t> fts_stats(const TextSearchRequest& r) const {
    auto cols = detail::c_strings(r.columns);
    LanceTextQuery q = detail::text_query(r, cols);
    uint8_t* b = nullptr;
    size_t n = 0;
    check(lance_dataset_fts_stats(p_.get(), &q, &b, &n, nullptr));
    std::vector<uint8_t> out(b, b + n);
    lance_bytes_free(b, n);
    return out;
  }
  /// Search one full-text split with the coordinator's statistics (`_score` descending).
  Stream fts_search(const Split& split, const TextSearchRequest& r, const std::vector<uint8_t>& stats) const {
    auto cols = detail::c_strings(r.columns);
    LanceTextQuery q = detail::text_query(r, cols);
    ArrowArrayStream s;
    check(lance_split_fts_search(p_.get(), split.get(), &q, stats.data(), stats.size(), &s));
    return Stream(s);
  }
  /// Search a split that is the whole corpus (every segment combined, on a snapshot whose index
  /// covers every fragment) without shipped statistics: the search computes them. Any other
  /// split throws (LANCE_ERR_INVALID_ARGUMENT).
  Stream fts_search(const Split& split, const TextSearchRequest& r) const {
    return fts_search(split, r, std::vector<uint8_t>());
  }
  void prewarm_index(const std::string& name) const { check(lance_dataset_prewarm_index(p_.get(), name.c_str())); }
  /// Prewarm every segment and return the I/O it caused.
  LanceIoStats prewarm_index_with_stats(const std::string& name) const {
    LanceIoStats io = detail::io_stats();
    check(lance_dataset_prewarm_index_with_stats_v2(p_.get(), name.c_str(), &io));
    return io;
  }
  /// Prewarm only the given segments (e.g. the UUIDs of the splits this worker serves).
  LanceIoStats prewarm_index_segments(const std::string& name, const std::vector<std::array<uint8_t, 16>>& uuids) const {
    std::vector<uint8_t> raw;
    for (const auto& u : uuids) raw.insert(raw.end(), u.begin(), u.end());
    LanceIoStats io = detail::io_stats();
    check(lance_dataset_prewarm_index_segments_v2(p_.get(), name.c_str(), raw.data(), raw.size(), &io));
    return io;
  }

  static Dataset open_at_timestamp(const std::string& uri, int64_t timestamp_ms,
                                   const std::map<std::string, std::string>& storage_options = {}) {
    detail::KeyValues kv(storage_options);
    return Dataset(lance_dataset_open_at_timestamp(uri.c_str(), kv.get(), timestamp_ms));
  }
  /// The newest version committed at or before the microsecond `timestamp_us` since the epoch
  /// (lance_dataset_open_at_timestamp_us; NOT_FOUND when no version is that old).
  static Dataset open_at_timestamp_us(const std::string& uri, int64_t timestamp_us,
                                      const std::map<std::string, std::string>& storage_options = {}) {
    detail::KeyValues kv(storage_options);
    return Dataset(lance_dataset_open_at_timestamp_us(uri.c_str(), kv.get(), timestamp_us));
  }
  /// Open a shipped snapshot token without reading the manifest.
  static Dataset open_snapshot(const std::vector<uint8_t>& token,
                               const std::map<std::string, std::string>& storage_options = {}) {
    detail::KeyValues kv(storage_options);
    return Dataset(lance_snapshot_open(token.data(), token.size(), kv.get()));
  }
  std::vector<uint8_t> export_snapshot() const {
    uint8_t* b = nullptr;
    size_t n = 0;
    check(lance_dataset_export_snapshot(p_.get(), &b, &n));
    return detail::take_bytes(b, n);
  }
  /// The token of one scan split: the manifest cut down to the split's fragments
  /// (lance_dataset_export_split_snapshot). The dataset `open_snapshot` makes of it runs scan
  /// splits of those fragments and throws LANCE_ERR_INVALID_ARGUMENT for whole-table calls.
  std::vector<uint8_t> export_split_snapshot(const Split& split) const {
    uint8_t* b = nullptr;
    size_t n = 0;
    check(lance_dataset_export_split_snapshot(p_.get(), split.get(), &b, &n));
    return detail::take_bytes(b, n);
  }
  std::string storage_format() const { return lance_dataset_storage_format(p_.get()); }
  uint64_t latest_version() const {
    uint64_t v = 0;
    check(lance_dataset_latest_version(p_.get(), &v));
    return v;
  }
  /// The Arrow schema (released when the last copy of the pointer goes).
  std::shared_ptr<ArrowSchema> schema() const {
    auto s = std::shared_ptr<ArrowSchema>(new ArrowSchema(), [](ArrowSchema* p) {
      if (p->release) p->release(p);
      delete p;
    });
    s->release = nullptr;
    check(lance_dataset_schema(p_.get(), s.get()));
    return s;
  }
  std::vector<LanceFragmentInfo> fragments() const {
    LanceFragmentInfo* p = nullptr;
    size_t n = 0;
    check(lance_dataset_fragments(p_.get(), &p, &n));
    std::vector<LanceFragmentInfo> out(p, p + n);
    lance_fragment_info_list_free(p, n);
    return out;
  }
  std::vector<LanceVersionInfo> versions() const {
    LanceVersionInfo* p = nullptr;
    size_t n = 0;
    check(lance_dataset_versions(p_.get(), &p, &n));
    std::vector<LanceVersionInfo> out(p, p + n);
    lance_version_info_list_free(p, n);
    return out;
  }
  /// Rows (all when `filter` is empty) and the I/O the count caused.
  std::pair<uint64_t, LanceIoStats> count_rows_with_io(const std::optional<std::string>& filter = std::nullopt) const {
    uint64_t n = 0;
    LanceIoStats io = detail::io_stats();
    if (!filter) {
      check(lance_dataset_count_rows(p_.get(), &n));
    } else {
      check(lance_dataset_count_rows_where_v2(p_.get(), filter->c_str(), &n, &io));
    }
    return {n, io};
  }
  std::pair<uint64_t, LanceIoStats> count_split_rows(const Split& split,
                                                     const std::optional<std::string>& filter = std::nullopt) const {
    uint64_t n = 0;
    LanceIoStats io = detail::io_stats();
    check(lance_split_count_rows_v2(p_.get(), split.get(), filter ? filter->c_str() : nullptr, &n, &io));
    return {n, io};
  }
  /// The results of `q` over the pinned version in one call (lance_dataset_aggregate): the
  /// group-by columns, then one column per aggregate. Since 0.12.
  std::pair<Stream, LanceIoStats> aggregate(const AggregateQuery& q) const {
    detail::AggregateSpec spec(q);
    ArrowArrayStream out;
    LanceIoStats io = detail::io_stats();
    check(lance_dataset_aggregate(p_.get(), &spec.spec, &out, &io));
    return {Stream(out), io};
  }
  /// The partial states of `q` over one scan split (lance_dataset_aggregate_split); merge the
  /// partials of all splits with `aggregate_merge`. Since 0.12.
  std::pair<Stream, LanceIoStats> aggregate_split(const Split& split, const AggregateQuery& q) const {
    detail::AggregateSpec spec(q);
    ArrowArrayStream out;
    LanceIoStats io = detail::io_stats();
    check(lance_dataset_aggregate_split(p_.get(), split.get(), &spec.spec, &out, &io));
    return {Stream(out), io};
  }
  struct Statistics {
    std::vector<LanceFragmentStats> fragments;
    std::vector<std::pair<std::string, std::optional<uint64_t>>> columns;  ///< name, bytes on disk
    LanceIoStats io;
  };
  Statistics statistics() const {
    LanceTableStats* t = nullptr;
    Statistics out{{}, {}, detail::io_stats()};
    check(lance_dataset_statistics_v2(p_.get(), &t, &out.io));
    std::unique_ptr<LanceTableStats, detail::Deleter<LanceTableStats, lance_table_stats_free>> guard(t);
    for (size_t i = 0; i < lance_table_stats_fragment_count(t); i++) {
      LanceFragmentStats f{};
      f.struct_size = sizeof f;
      check(lance_table_stats_fragment_v2(t, i, &f));
      out.fragments.push_back(f);
    }
    for (size_t i = 0; i < lance_table_stats_column_count(t); i++) {
      LanceColumnStats c{};
      c.struct_size = sizeof c;
      check(lance_table_stats_column_v2(t, i, &c));
      out.columns.emplace_back(c.name, c.has_bytes_on_disk ? std::optional<uint64_t>(c.bytes_on_disk) : std::nullopt);
    }
    return out;
  }
  struct IndexSegment {
    std::array<uint8_t, 16> uuid;
    std::vector<uint64_t> fragment_ids;
    uint64_t indexed_rows;
    uint64_t num_partitions;  ///< IVF partitions of a vector segment (nprobes for all); 0 otherwise
  };
  struct IndexInfo {
    std::string name, column, type;
    std::optional<std::string> metric;  ///< vector indexes only
    std::vector<IndexSegment> segments;
  };
  std::vector<IndexInfo> indexes() const {
    LanceIndexList* l = nullptr;
    check(lance_dataset_indexes(p_.get(), &l));
    std::unique_ptr<LanceIndexList, detail::Deleter<LanceIndexList, lance_index_list_free>> guard(l);
    std::vector<IndexInfo> out;
    for (size_t i = 0; i < lance_index_list_count(l); i++) {
      const char* metric = lance_index_list_metric(l, i);
      IndexInfo info{lance_index_list_name(l, i), lance_index_list_column(l, i), lance_index_list_type(l, i),
                     metric ? std::optional<std::string>(metric) : std::nullopt, {}};
      for (size_t j = 0; j < lance_index_list_segment_count(l, i); j++) {
        LanceIndexSegmentInfo s{};
        s.struct_size = sizeof s;
        check(lance_index_list_segment_v2(l, i, j, &s));
        IndexSegment seg{{}, std::vector<uint64_t>(s.fragment_ids, s.fragment_ids + s.num_fragment_ids), s.indexed_rows,
                         s.num_partitions};
        std::copy(s.uuid, s.uuid + 16, seg.uuid.begin());
        info.segments.push_back(std::move(seg));
      }
      out.push_back(std::move(info));
    }
    return out;
  }
  /// Lance's plan text for `scan(r)`; nothing is read.
  std::string explain_scan(const ScanRequest& r = {}) const {
    auto cols = detail::c_strings(r.columns);
    LanceScanOptions o = scan_options(r, cols);
    char* text = nullptr;
    check(lance_dataset_explain_scan_v2(p_.get(), &o, &text));
    return detail::take_string(text);
  }
  std::string explain_search(const Split& split, const SearchRequest& r) const {
    auto cols = detail::c_strings(r.columns);
    LanceVectorQuery q = vector_query(r, cols);
    char* text = nullptr;
    check(lance_split_explain_search_v2(p_.get(), split.get(), &q, &text));
    return detail::take_string(text);
  }
  std::string explain_fts(const Split& split, const TextSearchRequest& r, const std::vector<uint8_t>& stats) const {
    auto cols = detail::c_strings(r.columns);
    LanceTextQuery q = detail::text_query(r, cols);
    char* text = nullptr;
    check(lance_split_explain_fts(p_.get(), split.get(), &q, stats.data(), stats.size(), &text));
    return detail::take_string(text);
  }
  /// Exact re-rank of merged approximate candidates (consumes `candidates`).
  Stream refine(Stream&& candidates, const SearchRequest& r) const {
    auto cols = detail::c_strings(r.columns);
    LanceVectorQuery q = vector_query(r, cols);
    ArrowArrayStream in = candidates.release();
    ArrowArrayStream out;
    check(lance_dataset_refine_v2(p_.get(), &q, &in, &out));
    return Stream(out);
  }
  /// Delete the rows matching the Lance SQL `predicate` as one new version planned at this
  /// handle's version; this handle keeps its version. Returns the new version and what was done.
  std::pair<Dataset, LanceWriteResult> delete_rows(const std::string& predicate, const WriteRequest& r = {}) const {
    detail::WriteParams p(r);
    LanceDataset* out = nullptr;
    LanceWriteResult res = detail::write_result();
    check(lance_dataset_delete(p_.get(), predicate.c_str(), p.get(), &out, &res));
    return {Dataset(out), res};
  }
  /// `UPDATE SET column = expression, ... [WHERE where]` as one new version planned at this
  /// handle's version (`values`: column, Lance SQL expression over the row).
  std::pair<Dataset, LanceWriteResult> update(const std::vector<std::pair<std::string, std::string>>& values,
                                              const std::optional<std::string>& where = std::nullopt,
                                              const WriteRequest& r = {}) const {
    std::vector<const char*> cols, exprs;
    for (const auto& [c, e] : values) {
      cols.push_back(c.c_str());
      exprs.push_back(e.c_str());
    }
    detail::WriteParams p(r);
    LanceDataset* out = nullptr;
    LanceWriteResult res = detail::write_result();
    check(lance_dataset_update(p_.get(), cols.data(), exprs.data(), values.size(), where ? where->c_str() : nullptr,
                               p.get(), &out, &res));
    return {Dataset(out), res};
  }
  /// MERGE INTO this table from `data` (consumed) by `m.on`, as one new version planned at this
  /// handle's version; the result counts rows inserted, updated and deleted.
  std::pair<Dataset, LanceWriteResult> merge_insert(Stream&& data, const MergeRequest& m,
                                                    const WriteRequest& r = {}) const {
    auto on = detail::c_strings(m.on);
    LanceMergeInsert spec = merge_spec(m, on);
    detail::WriteParams p(r);
    ArrowArrayStream in = data.release();
    LanceDataset* out = nullptr;
    LanceWriteResult res = detail::write_result();
    check(lance_dataset_merge_insert(p_.get(), &in, &spec, p.get(), &out, &res));
    return {Dataset(out), res};
  }
  /// The merge-insert of `data` (consumed) without its commit: the coordinator commits the
  /// staged bytes alone with lance_host::commit (or aborts them).
  StagedWrite stage_merge_insert(Stream&& data, const MergeRequest& m) const {
    auto on = detail::c_strings(m.on);
    LanceMergeInsert spec = merge_spec(m, on);
    ArrowArrayStream in = data.release();
    uint8_t* bytes = nullptr;
    size_t n = 0;
    StagedWrite out{{}, detail::write_result()};
    check(lance_dataset_stage_merge_insert(p_.get(), &in, &spec, &bytes, &n, &out.result));
    out.bytes = detail::take_bytes(bytes, n);
    return out;
  }
  /// One worker's share of a delete without its commit: the rows of `split`'s fragments (a scan
  /// split of this version; nullptr = all) matching `predicate`. The coordinator commits all
  /// shares as one delete with lance_host::commit.
  StagedWrite stage_delete(const std::string& predicate, const Split* split = nullptr) const {
    uint8_t* bytes = nullptr;
    size_t n = 0;
    StagedWrite out{{}, detail::write_result()};
    check(lance_dataset_stage_delete(p_.get(), split ? split->get() : nullptr, predicate.c_str(), &bytes, &n,
                                     &out.result));
    out.bytes = detail::take_bytes(bytes, n);
    return out;
  }
  /// One worker's share of a row-level change without its commit: the rows at `row_addresses`
  /// (`_rowaddr` values read from this version) are deleted when the coordinator commits this
  /// share with the statement's staged appends (lance_host::commit, one version). Nothing is
  /// written now. Since 0.13.
  StagedWrite stage_row_deletes(const std::vector<uint64_t>& row_addresses) const {
    uint8_t* bytes = nullptr;
    size_t n = 0;
    StagedWrite out{{}, detail::write_result()};
    check(lance_dataset_stage_row_deletes(p_.get(), row_addresses.data(), row_addresses.size(), &bytes, &n,
                                          &out.result));
    out.bytes = detail::take_bytes(bytes, n);
    return out;
  }
  /// Compact the table (small fragments, many deletions) as one new version planned at this
  /// handle's version; 0 fields = Lance's defaults.
  std::pair<Dataset, LanceCompactResult> compact(const CompactRequest& r = {}) const {
    LanceCompactParams p = detail::compact_params(r);
    LanceDataset* out = nullptr;
    LanceCompactResult res = detail::compact_result();
    check(lance_dataset_compact(p_.get(), &p, &out, &res));
    return {Dataset(out), res};
  }
  /// A distributed compaction's tasks, as bytes to ship to workers (empty: nothing to do).
  std::vector<std::vector<uint8_t>> plan_compaction(const CompactRequest& r = {}) const {
    LanceCompactParams p = detail::compact_params(r);
    LanceBytesList* l = nullptr;
    check(lance_dataset_plan_compaction(p_.get(), &p, &l));
    return detail::take_list(l);
  }
  /// Execute one compaction task on a worker (nothing committed); returns the result bytes.
  std::vector<uint8_t> execute_compaction_task(const std::vector<uint8_t>& task) const {
    uint8_t* bytes = nullptr;
    size_t n = 0;
    check(lance_compaction_task_execute(p_.get(), task.data(), task.size(), &bytes, &n));
    return detail::take_bytes(bytes, n);
  }
  /// Commit the results of one compaction plan's tasks as one new version.
  std::pair<Dataset, LanceCompactResult> commit_compaction(const std::vector<std::vector<uint8_t>>& results,
                                                           const CompactRequest& r = {}) const {
    LanceCompactParams p = detail::compact_params(r);
    detail::ByteArrays a(results);
    LanceDataset* out = nullptr;
    LanceCompactResult res = detail::compact_result();
    check(lance_dataset_commit_compaction(p_.get(), a.ptrs.data(), a.lens.data(), results.size(), &p, &out, &res));
    return {Dataset(out), res};
  }
  /// Build a vector index on `column` as one new version (`name` empty = Lance's default name).
  Dataset create_vector_index(const std::string& column, const VectorIndexRequest& r = {},
                              const std::string& name = "", bool replace = false) const {
    LanceVectorIndexParams p = detail::vector_index_params(r);
    LanceDataset* out = nullptr;
    check(lance_dataset_create_vector_index(p_.get(), column.c_str(), name.empty() ? nullptr : name.c_str(), replace,
                                            &p, &out));
    return Dataset(out);
  }
  /// Build a scalar index (BTREE, BITMAP, LABEL_LIST) on `column` as one new version.
  Dataset create_scalar_index(const std::string& column, LanceScalarIndexType type = LANCE_SCALAR_INDEX_BTREE,
                              const std::string& name = "", bool replace = false) const {
    LanceScalarIndexParams p;
    check(lance_scalar_index_params_init_v2(&p, sizeof p));
    p.index_type = type;
    LanceDataset* out = nullptr;
    check(lance_dataset_create_scalar_index(p_.get(), column.c_str(), name.empty() ? nullptr : name.c_str(), replace,
                                            &p, &out));
    return Dataset(out);
  }
  /// Build an INVERTED (full-text) index on the string column `column` as one new version.
  Dataset create_inverted_index(const std::string& column, const InvertedIndexRequest& r = {},
                                const std::string& name = "", bool replace = false) const {
    LanceInvertedIndexParams p = detail::inverted_index_params(r);
    LanceDataset* out = nullptr;
    check(lance_dataset_create_inverted_index(p_.get(), column.c_str(), name.empty() ? nullptr : name.c_str(), replace,
                                              &p, &out));
    return Dataset(out);
  }
  /// Train a vector index's global model (IVF centroids, PQ codebook) on the coordinator;
  /// returns the model bytes for `plan_vector_index_build`.
  std::vector<uint8_t> train_vector_index(const std::string& column, const VectorIndexRequest& r = {}) const {
    LanceVectorIndexParams p = detail::vector_index_params(r);
    uint8_t* bytes = nullptr;
    size_t n = 0;
    check(lance_dataset_train_vector_index(p_.get(), column.c_str(), &p, &bytes, &n, nullptr));
    return detail::take_bytes(bytes, n);
  }
  /// Plan a distributed vector index build with `model`: one task (bytes) per build split.
  std::vector<std::vector<uint8_t>> plan_vector_index_build(const std::string& column,
                                                            const std::vector<uint8_t>& model,
                                                            const IndexBuildPlan& plan = {},
                                                            const std::string& name = "",
                                                            bool replace = false) const {
    LanceIndexBuildPlanParams pp = detail::plan_params(plan);
    LanceBytesList* l = nullptr;
    check(lance_dataset_plan_vector_index_build(p_.get(), column.c_str(), name.empty() ? nullptr : name.c_str(),
                                                replace, model.data(), model.size(), &pp, &l));
    return detail::take_list(l);
  }
  /// Plan a distributed INVERTED index build: one task (bytes) per build split.
  std::vector<std::vector<uint8_t>> plan_inverted_index_build(const std::string& column,
                                                              const InvertedIndexRequest& r = {},
                                                              const IndexBuildPlan& plan = {},
                                                              const std::string& name = "",
                                                              bool replace = false) const {
    LanceInvertedIndexParams p = detail::inverted_index_params(r);
    LanceIndexBuildPlanParams pp = detail::plan_params(plan);
    LanceBytesList* l = nullptr;
    check(lance_dataset_plan_inverted_index_build(p_.get(), column.c_str(), name.empty() ? nullptr : name.c_str(),
                                                  replace, &p, &pp, &l));
    return detail::take_list(l);
  }
  /// Plan a distributed scalar index build: one task (bytes) per build split.
  std::vector<std::vector<uint8_t>> plan_scalar_index_build(const std::string& column,
                                                            LanceScalarIndexType type = LANCE_SCALAR_INDEX_BTREE,
                                                            const IndexBuildPlan& plan = {},
                                                            const std::string& name = "",
                                                            bool replace = false) const {
    LanceScalarIndexParams p;
    check(lance_scalar_index_params_init_v2(&p, sizeof p));
    p.index_type = type;
    LanceIndexBuildPlanParams pp = detail::plan_params(plan);
    LanceBytesList* l = nullptr;
    check(lance_dataset_plan_scalar_index_build(p_.get(), column.c_str(), name.empty() ? nullptr : name.c_str(),
                                                replace, &p, &pp, &l));
    return detail::take_list(l);
  }
  /// Build the segment of one task on a worker (nothing committed); returns the segment bytes.
  /// `io` (optional) receives the reads the build made (object stores).
  std::vector<uint8_t> execute_index_build_task(const std::vector<uint8_t>& task, LanceIoStats* io = nullptr) const {
    uint8_t* bytes = nullptr;
    size_t n = 0;
    if (io != nullptr) io->struct_size = sizeof *io;
    check(lance_index_build_task_execute(p_.get(), task.data(), task.size(), &bytes, &n, io));
    return detail::take_bytes(bytes, n);
  }
  /// Commit the segments of one build plan as one index in one new version (merged first
  /// into one segment with `merge`).
  Dataset commit_index_build(const std::vector<std::vector<uint8_t>>& segments, bool merge = false) const {
    detail::ByteArrays a(segments);
    LanceDataset* out = nullptr;
    check(lance_dataset_commit_index_build(p_.get(), a.ptrs.data(), a.lens.data(), segments.size(), merge, &out));
    return Dataset(out);
  }
  /// Index the fragments appended since the index(es) were built: a new segment (`merge` 0)
  /// or the newest `merge` segments merged with them (`name` empty = every index).
  Dataset optimize_indexes(const std::string& name = "", uint32_t merge = 0) const {
    LanceDataset* out = nullptr;
    check(lance_dataset_optimize_indexes(p_.get(), name.empty() ? nullptr : name.c_str(), merge, &out));
    return Dataset(out);
  }
  /// Drop the index `name` as one new version.
  Dataset drop_index(const std::string& name) const {
    LanceDataset* out = nullptr;
    check(lance_dataset_drop_index(p_.get(), name.c_str(), &out));
    return Dataset(out);
  }
  /// Add columns computed from Lance SQL expressions (name, expression), as one new version.
  Dataset add_columns(const std::vector<std::pair<std::string, std::string>>& columns) const {
    std::vector<const char*> names, exprs;
    for (const auto& [n, e] : columns) {
      names.push_back(n.c_str());
      exprs.push_back(e.c_str());
    }
    LanceDataset* out = nullptr;
    check(lance_dataset_add_columns(p_.get(), names.data(), exprs.data(), columns.size(), &out));
    return Dataset(out);
  }
  /// Add the nullable fields of the Arrow C schema `columns` (borrowed) as all-null columns.
  Dataset add_null_columns(const ArrowSchema& columns) const {
    LanceDataset* out = nullptr;
    check(lance_dataset_add_null_columns(p_.get(), &columns, &out));
    return Dataset(out);
  }
  /// Drop columns (metadata only), as one new version.
  Dataset drop_columns(const std::vector<std::string>& names) const {
    auto c = detail::c_strings(names);
    LanceDataset* out = nullptr;
    check(lance_dataset_drop_columns(p_.get(), c.data(), names.size(), &out));
    return Dataset(out);
  }
  /// Remove versions older than `older_than_ms` (the latest and tagged ones stay) and the files
  /// only they used; returns the versions and bytes removed.
  CleanupResult cleanup(uint64_t older_than_ms, bool delete_unverified = false) const {
    CleanupResult r;
    check(lance_dataset_cleanup(p_.get(), older_than_ms, delete_unverified, &r.versions_removed, &r.bytes_removed));
    return r;
  }
  /// Tag `version` (0 = this handle's) as `name`.
  void create_tag(const std::string& name, uint64_t version = 0) const {
    check(lance_dataset_create_tag(p_.get(), name.c_str(), version));
  }
  void delete_tag(const std::string& name) const { check(lance_dataset_delete_tag(p_.get(), name.c_str())); }
  /// The table's tags: name -> version.
  std::map<std::string, uint64_t> tags() const {
    LanceTagList* l = nullptr;
    check(lance_dataset_tags(p_.get(), &l));
    std::unique_ptr<LanceTagList, detail::Deleter<LanceTagList, lance_tag_list_free>> guard(l);
    std::map<std::string, uint64_t> out;
    for (size_t i = 0; i < lance_tag_list_count(l); i++) out[lance_tag_list_name(l, i)] = lance_tag_list_version(l, i);
    return out;
  }
  /// The table pinned at the version `tag` names.
  static Dataset open_tag(const std::string& uri, const std::string& tag,
                          const std::map<std::string, std::string>& storage_options = {}) {
    detail::KeyValues kv(storage_options);
    return Dataset(lance_dataset_open_tag(uri.c_str(), kv.get(), tag.c_str()));
  }
  /// The table on `branch` ("main" = the default one) at `version` of that branch (0 = its
  /// latest). Since 0.14.
  static Dataset open_branch(const std::string& uri, const std::string& branch, uint64_t version = 0,
                             const std::map<std::string, std::string>& storage_options = {}) {
    detail::KeyValues kv(storage_options);
    return Dataset(lance_dataset_open_branch(uri.c_str(), kv.get(), branch.c_str(), version));
  }
  /// The branch this handle is on ("main" for the default one). Since 0.14.
  std::string branch() const { return lance_dataset_branch(p_.get()); }
  /// Create branch `name` from `version` of this handle's branch (0 = this version); returns
  /// the branch at its first version. Since 0.14.
  Dataset create_branch(const std::string& name, uint64_t version = 0) const {
    LanceDataset* out = nullptr;
    check(lance_dataset_create_branch(p_.get(), name.c_str(), version, &out));
    return Dataset(out);
  }
  void delete_branch(const std::string& name) const { check(lance_dataset_delete_branch(p_.get(), name.c_str())); }
  /// The table's branches: name -> (parent branch, parent version). Since 0.14.
  std::map<std::string, std::pair<std::string, uint64_t>> branches() const {
    LanceBranchList* l = nullptr;
    check(lance_dataset_branches(p_.get(), &l));
    std::unique_ptr<LanceBranchList, detail::Deleter<LanceBranchList, lance_branch_list_free>> guard(l);
    std::map<std::string, std::pair<std::string, uint64_t>> out;
    for (size_t i = 0; i < lance_branch_list_count(l); i++)
      out[lance_branch_list_name(l, i)] = {lance_branch_list_parent(l, i), lance_branch_list_parent_version(l, i)};
    return out;
  }
  /// This version cloned into a new table at `target_uri` that references this table's files.
  /// Since 0.14.
  Dataset shallow_clone(const std::string& target_uri, const std::map<std::string, std::string>& storage_options = {}) const {
    detail::KeyValues kv(storage_options);
    LanceDataset* out = nullptr;
    check(lance_dataset_shallow_clone(p_.get(), target_uri.c_str(), kv.get(), &out));
    return Dataset(out);
  }
  /// The table's config at this handle's version (pylance's `config()`).
  std::map<std::string, std::string> config() const {
    LanceStringList* l = nullptr;
    check(lance_dataset_config(p_.get(), &l));
    std::unique_ptr<LanceStringList, detail::Deleter<LanceStringList, lance_string_list_free>> guard(l);
    std::map<std::string, std::string> out;
    for (size_t i = 0; i + 1 < lance_string_list_count(l); i += 2)
      out[lance_string_list_get(l, i)] = lance_string_list_get(l, i + 1);
    return out;
  }
  /// Set and remove config keys as one new version; `r` carries the commit's settings and
  /// preconditions (`expected_version`, `required_config`). Since 0.14.
  std::pair<Dataset, LanceWriteResult> update_config(const std::map<std::string, std::string>& set,
                                                     const std::vector<std::string>& remove = {},
                                                     const WriteRequest& r = {}) const {
    detail::KeyValues kv(set);
    auto keys = detail::c_strings(remove);
    detail::WriteParams p(r);
    LanceDataset* out = nullptr;
    auto res = detail::write_result();
    check(lance_dataset_update_config(p_.get(), kv.get(), keys.data(), remove.size(), p.get(), &out, &res));
    return {Dataset(out), res};
  }
  /// Make this handle's version the latest again, as a new version.
  Dataset restore() const {
    LanceDataset* out = nullptr;
    check(lance_dataset_restore(p_.get(), &out));
    return Dataset(out);
  }
  const LanceDataset* get() const { return p_.get(); }
  /// Give up ownership (free with lance_dataset_free).
  LanceDataset* release() { return p_.release(); }

 private:
  static LanceMergeInsert merge_spec(const MergeRequest& m, const std::vector<const char*>& on) {
    LanceMergeInsert spec;
    check(lance_merge_insert_init_v2(&spec, sizeof spec));
    spec.on = on.data();
    spec.num_on = on.size();
    spec.when_matched = m.when_matched;
    spec.when_matched_condition = m.when_matched_condition ? m.when_matched_condition->c_str() : nullptr;
    spec.when_not_matched = m.when_not_matched;
    spec.when_not_matched_by_source = m.when_not_matched_by_source;
    spec.by_source_condition = m.by_source_condition ? m.by_source_condition->c_str() : nullptr;
    return spec;
  }
  static LanceScanOptions scan_options(const ScanRequest& r, const std::vector<const char*>& cols) {
    LanceScanOptions o;
    check(lance_scan_options_init_v2(&o, sizeof(LanceScanOptions)));
    o.columns = cols.data();
    o.num_columns = cols.size();
    o.filter_sql = r.filter ? r.filter->c_str() : nullptr;
    o.limit = r.limit;
    o.offset = r.offset;
    o.batch_size = r.batch_size;
    o.with_row_id = r.with_row_id;
    o.fragment_ids = r.fragment_ids.data();
    o.num_fragment_ids = r.fragment_ids.size();
    o.order_by = r.order_by ? r.order_by->c_str() : nullptr;
    o.dynamic_filter = r.dynamic_filter;
    return o;
  }
  static LanceVectorQuery vector_query(const SearchRequest& r, const std::vector<const char*>& cols) {
    LanceVectorQuery q;
    check(lance_vector_query_init_v2(&q, sizeof(LanceVectorQuery)));
    q.column = r.column.c_str();
    q.vector = r.vector.data();
    q.num_queries = r.num_queries;
    q.dimension = r.num_queries > 1 ? r.vector.size() / r.num_queries : r.vector.size();
    q.element_type = LANCE_ELEMENT_F32;
    q.k = r.k;
    q.metric = r.metric;
    q.nprobes = r.nprobes;
    q.refine_factor = r.refine_factor;
    q.prefilter_sql = r.prefilter ? r.prefilter->c_str() : nullptr;
    q.columns = cols.data();
    q.num_columns = cols.size();
    q.with_row_id = r.with_row_id;
    q.defer_refine = r.defer_refine;
    if (r.distance_lower) {
      q.distance_lower = *r.distance_lower;
      q.distance_bounds |= 1;
    }
    if (r.distance_upper) {
      q.distance_upper = *r.distance_upper;
      q.distance_bounds |= 2;
    }
    return q;
  }
  std::unique_ptr<LanceDataset, detail::Deleter<LanceDataset, lance_dataset_free>> p_;
};

inline Dataset Split::open_dataset(const std::map<std::string, std::string>& storage_options) const {
  detail::KeyValues kv(storage_options);
  return Dataset(lance_split_open_dataset(p_.get(), kv.get()));
}

/// The global top-k of several split results (consumes them).
inline Stream merge(std::vector<Stream>&& streams, uint64_t k, uint64_t offset = 0) {
  std::vector<ArrowArrayStream> raw;
  raw.reserve(streams.size());
  for (auto& s : streams) raw.push_back(s.release());
  ArrowArrayStream out;
  check(lance_topk_merge(raw.data(), raw.size(), k, offset, &out));
  return Stream(out);
}

/// The results from the partial states of splits (lance_aggregate_merge; consumes them).
/// Since 0.12.
inline Stream aggregate_merge(std::vector<Stream>&& partials) {
  std::vector<ArrowArrayStream> raw;
  raw.reserve(partials.size());
  for (auto& s : partials) raw.push_back(s.release());
  ArrowArrayStream out;
  check(lance_aggregate_merge(raw.empty() ? nullptr : raw.data(), raw.size(), &out));
  return Stream(out);
}

/// The global top-k of several full-text split results by `_score` (consumes them).
inline Stream merge_fts(std::vector<Stream>&& streams, uint64_t k, uint64_t offset = 0) {
  std::vector<ArrowArrayStream> raw;
  raw.reserve(streams.size());
  for (auto& s : streams) raw.push_back(s.release());
  ArrowArrayStream out;
  check(lance_fts_merge(raw.data(), raw.size(), k, offset, &out));
  return Stream(out);
}

/// Reciprocal-rank fusion of a merged vector result and a merged full-text result (consumes
/// both): `_rowid`, `_relevance_score`, `_distance`, `_score`, best first.
inline Stream rrf_merge(Stream&& vector, Stream&& text, uint64_t k, double rrf_k = 60.0) {
  ArrowArrayStream v = vector.release();
  ArrowArrayStream t = text.release();
  ArrowArrayStream out;
  check(lance_rrf_merge(&v, &t, k, rrf_k, &out));
  return Stream(out);
}

namespace detail {
/// A deep copy of an ArrowSchema that owns its memory (released by its own callback).
struct SchemaCopy {
  std::string format, name;
  bool has_name = false;
  std::vector<char> metadata;
  std::vector<ArrowSchema*> children;
  ArrowSchema* dictionary = nullptr;
  ~SchemaCopy() {
    for (ArrowSchema* c : children) {
      if (c->release) c->release(c);
      delete c;
    }
    if (dictionary) {
      if (dictionary->release) dictionary->release(dictionary);
      delete dictionary;
    }
  }
};
/// Bytes of Arrow's schema metadata encoding (int32 count, then int32-length-prefixed keys and
/// values), or 0 for none.
inline size_t metadata_bytes(const char* m) {
  if (m == nullptr) return 0;
  auto i32 = [m](size_t at) {
    int32_t v;
    std::memcpy(&v, m + at, sizeof v);
    return static_cast<size_t>(v);
  };
  size_t at = 4;
  for (size_t pair = 0, n = i32(0); pair < n; pair++) {
    at += 4 + i32(at);
    at += 4 + i32(at);
  }
  return at;
}
inline void release_schema_copy(ArrowSchema* s) {
  delete static_cast<SchemaCopy*>(s->private_data);
  s->release = nullptr;
}
inline void copy_schema(const ArrowSchema& src, ArrowSchema* dst) {
  auto c = std::make_unique<SchemaCopy>();
  c->format = src.format ? src.format : "";
  c->has_name = src.name != nullptr;
  c->name = src.name ? src.name : "";
  c->metadata.assign(src.metadata, src.metadata + metadata_bytes(src.metadata));
  for (int64_t i = 0; i < src.n_children; i++) {
    c->children.push_back(new ArrowSchema());
    c->children.back()->release = nullptr;
    copy_schema(*src.children[i], c->children.back());
  }
  if (src.dictionary) {
    c->dictionary = new ArrowSchema();
    c->dictionary->release = nullptr;
    copy_schema(*src.dictionary, c->dictionary);
  }
  dst->format = c->format.c_str();
  dst->name = c->has_name ? c->name.c_str() : nullptr;
  dst->metadata = c->metadata.empty() ? nullptr : c->metadata.data();
  dst->flags = src.flags;
  dst->n_children = src.n_children;
  dst->children = c->children.empty() ? nullptr : c->children.data();
  dst->dictionary = c->dictionary;
  dst->release = release_schema_copy;
  dst->private_data = c.release();
}
/// What a stream of host batches holds.
struct HostBatches {
  ArrowSchema schema;
  std::vector<ArrowArray> batches;
  size_t next = 0;
  std::string error;
  ~HostBatches() {
    for (size_t i = next; i < batches.size(); i++)
      if (batches[i].release) batches[i].release(&batches[i]);
    if (schema.release) schema.release(&schema);
  }
};
}  // namespace detail

/// A stream over batches the host already holds — `batches` (Arrow C Data arrays, each a
/// struct array of `schema`'s columns) — to hand to `write_table`, `stage_write` or
/// `Dataset::merge_insert`. Takes ownership of `schema` and of every array in `batches`: they
/// are released when the stream is (by the library once it has written them, also on failure).
/// The library checks each batch against `schema`: one of another layout fails the write with
/// LANCE_ERR_HOST_STREAM and commits nothing.
inline Stream stream_of(ArrowSchema schema, std::vector<ArrowArray> batches) {
  auto* held = new detail::HostBatches{schema, std::move(batches)};
  ArrowArrayStream s{};
  s.private_data = held;
  s.get_schema = [](ArrowArrayStream* self, ArrowSchema* out) -> int {
    auto* h = static_cast<detail::HostBatches*>(self->private_data);
    try {
      detail::copy_schema(h->schema, out);
      return 0;
    } catch (const std::exception& e) {
      h->error = e.what();
      return ENOMEM;
    }
  };
  s.get_next = [](ArrowArrayStream* self, ArrowArray* out) -> int {
    auto* h = static_cast<detail::HostBatches*>(self->private_data);
    if (h->next == h->batches.size()) {
      out->release = nullptr;  // the end
      return 0;
    }
    *out = h->batches[h->next];
    h->batches[h->next].release = nullptr;
    h->next++;
    return 0;
  };
  s.get_last_error = [](ArrowArrayStream* self) -> const char* {
    auto* h = static_cast<detail::HostBatches*>(self->private_data);
    return h->error.empty() ? nullptr : h->error.c_str();
  };
  s.release = [](ArrowArrayStream* self) {
    delete static_cast<detail::HostBatches*>(self->private_data);
    self->release = nullptr;
  };
  return Stream(s);
}

/// Write the batches of `data` (consumed) to the table at `uri` as ONE new version: create,
/// append or overwrite (`r.mode`). `at` (may be null) pins the version an append or overwrite
/// is planned at. Returns the new version pinned and what was written; a failure commits
/// nothing.
inline std::pair<Dataset, LanceWriteResult> write_table(const std::string& uri, Stream&& data,
                                                        const WriteRequest& r = {}, const Dataset* at = nullptr) {
  detail::WriteParams p(r);
  ArrowArrayStream in = data.release();
  LanceDataset* out = nullptr;
  LanceWriteResult res = detail::write_result();
  check(lance_table_write(uri.c_str(), at ? at->get() : nullptr, &in, p.get(), &out, &res));
  return {Dataset(out), res};
}

/// Stage `data` (consumed) as one worker's share of a write on the table at `uri` without
/// committing. Appends need `at`, the coordinator's pinned version (e.g. opened from its
/// snapshot token); a create has none.
inline StagedWrite stage_write(const std::string& uri, Stream&& data, const WriteRequest& r,
                               const Dataset* at = nullptr) {
  detail::WriteParams p(r);
  ArrowArrayStream in = data.release();
  uint8_t* bytes = nullptr;
  size_t n = 0;
  StagedWrite out{{}, detail::write_result()};
  check(lance_table_stage_write(uri.c_str(), at ? at->get() : nullptr, &in, p.get(), &bytes, &n, &out.result));
  out.bytes = detail::take_bytes(bytes, n);
  return out;
}

/// Commit the staged writes of one statement as ONE new version of the table at `uri` (all
/// rows visible or none). With `r.statement_id`, a statement already committed returns that
/// version with `committed == 0`. A lost race throws an Error with LANCE_ERR_CONFLICT.
inline std::pair<Dataset, LanceWriteResult> commit(const std::string& uri,
                                                   const std::vector<std::vector<uint8_t>>& staged,
                                                   const WriteRequest& r = {}) {
  detail::WriteParams p(r);
  detail::ByteArrays a(staged);
  LanceDataset* out = nullptr;
  LanceWriteResult res = detail::write_result();
  check(lance_table_commit(uri.c_str(), a.ptrs.data(), a.lens.data(), staged.size(), p.get(), &out, &res));
  return {Dataset(out), res};
}

/// One table of `commit_tables`: its URI, the staged writes of its statement and its request
/// (statement id, preconditions, properties, storage options).
struct TableCommit {
  std::string uri;
  std::vector<std::vector<uint8_t>> staged;
  WriteRequest request;
};

/// Commit the staged writes of several tables TOGETHER: every table gets its new version, or
/// none does. The tables must be managed by one namespace with batch commits, each opened
/// through a Catalog of it in this process; otherwise an Error with LANCE_ERR_NOT_SUPPORTED and
/// nothing committed. Returns each table's new version and result, in order.
inline std::vector<std::pair<Dataset, LanceWriteResult>> commit_tables(const std::vector<TableCommit>& tables) {
  const size_t n = tables.size();
  // deques: elements never move, so the pointers into them stay valid
  std::deque<detail::WriteParams> params;
  std::deque<detail::ByteArrays> arrays;
  std::vector<const char*> uris;
  std::vector<const uint8_t* const*> ptrs;
  std::vector<const size_t*> lens;
  std::vector<size_t> counts;
  std::vector<const LanceWriteParams*> param_ptrs;
  for (const auto& t : tables) {
    params.emplace_back(t.request);
    arrays.emplace_back(t.staged);
    uris.push_back(t.uri.c_str());
    ptrs.push_back(arrays.back().ptrs.data());
    lens.push_back(arrays.back().lens.data());
    counts.push_back(t.staged.size());
    param_ptrs.push_back(params.back().get());
  }
  std::vector<LanceDataset*> outs(n, nullptr);
  std::vector<LanceWriteResult> results(n, detail::write_result());
  std::vector<LanceWriteResult*> result_ptrs;
  for (auto& r : results) result_ptrs.push_back(&r);
  check(lance_commit_tables(n, uris.data(), ptrs.data(), lens.data(), counts.data(), param_ptrs.data(),
                            outs.data(), result_ptrs.data()));
  std::vector<std::pair<Dataset, LanceWriteResult>> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.emplace_back(Dataset(outs[i]), results[i]);
  return out;
}

/// Delete the files of staged writes that will not be committed; returns the number of files
/// deleted (0 when repeated). A file the table's latest version uses is never deleted.
inline uint64_t abort_staged(const std::vector<std::vector<uint8_t>>& staged,
                             const std::map<std::string, std::string>& storage_options = {}) {
  detail::ByteArrays a(staged);
  detail::KeyValues kv(storage_options);
  uint64_t n = 0;
  check(lance_staged_write_abort(a.ptrs.data(), a.lens.data(), staged.size(), kv.get(), &n));
  return n;
}

/// A directory or REST catalog.
class Catalog {
 public:
  static Catalog open(const std::map<std::string, std::string>& properties) {
    detail::KeyValues kv(properties);
    return Catalog(lance_catalog_open(kv.get()));
  }
  explicit Catalog(LanceCatalog* p) : p_(check_ptr(p)) {}
  const LanceCatalog* get() const { return p_.get(); }
  /// Give up ownership (free with lance_catalog_free).
  LanceCatalog* release() { return p_.release(); }

  std::vector<std::string> list_tables(const std::vector<std::string>& ns = {}) const {
    auto parts = detail::c_strings(ns);
    LanceStringList* l = nullptr;
    check(lance_catalog_list_tables(p_.get(), parts.data(), parts.size(), &l));
    std::vector<std::string> out;
    for (size_t i = 0; i < lance_string_list_count(l); i++) out.emplace_back(lance_string_list_get(l, i));
    lance_string_list_free(l);
    return out;
  }
  /// Child namespaces of `ns` (all descendants when `recursive`), each as its path.
  std::vector<std::vector<std::string>> list_namespaces(const std::vector<std::string>& ns = {},
                                                        bool recursive = false) const {
    auto parts = detail::c_strings(ns);
    LanceNamespaceList* l = nullptr;
    check(lance_catalog_list_namespaces(p_.get(), parts.data(), parts.size(), recursive, &l));
    std::unique_ptr<LanceNamespaceList, detail::Deleter<LanceNamespaceList, lance_namespace_list_free>> guard(l);
    std::vector<std::vector<std::string>> out;
    for (size_t i = 0; i < lance_namespace_list_count(l); i++) {
      std::vector<std::string> path;
      for (size_t j = 0; j < lance_namespace_list_depth(l, i); j++) path.emplace_back(lance_namespace_list_part(l, i, j));
      out.push_back(std::move(path));
    }
    return out;
  }
  struct TableInfo {
    std::string location;
    uint64_t latest_version;
    std::map<std::string, std::string> storage_options;
  };
  TableInfo describe_table(const std::string& table, const std::vector<std::string>& ns = {}) const {
    auto parts = detail::c_strings(ns);
    LanceTableInfo* t = nullptr;
    check(lance_catalog_describe_table(p_.get(), parts.data(), parts.size(), table.c_str(), &t));
    std::unique_ptr<LanceTableInfo, detail::Deleter<LanceTableInfo, lance_table_info_free>> guard(t);
    TableInfo info{lance_table_info_location(t), lance_table_info_latest_version(t), {}};
    const char* const* kv = lance_table_info_storage_options(t);
    for (size_t i = 0; kv && kv[i]; i += 2) info.storage_options[kv[i]] = kv[i + 1];
    return info;
  }
  Dataset open_table(const std::string& table, const std::vector<std::string>& ns = {}, uint64_t version = 0) const {
    auto parts = detail::c_strings(ns);
    return Dataset(lance_catalog_open_table(p_.get(), parts.data(), parts.size(), table.c_str(), version));
  }
  /// The table on `branch` at `version` of it (0 = its latest). Since 0.14.
  Dataset open_table_branch(const std::string& table, const std::string& branch, uint64_t version = 0,
                            const std::vector<std::string>& ns = {}) const {
    auto parts = detail::c_strings(ns);
    return Dataset(lance_catalog_open_table_branch(p_.get(), parts.data(), parts.size(), table.c_str(), branch.c_str(),
                                                   version));
  }
  /// The table at the version `tag` names. Since 0.14.
  Dataset open_table_tag(const std::string& table, const std::string& tag, const std::vector<std::string>& ns = {}) const {
    auto parts = detail::c_strings(ns);
    return Dataset(lance_catalog_open_table_tag(p_.get(), parts.data(), parts.size(), table.c_str(), tag.c_str()));
  }
  /// Create namespace `ns` (its parent must exist); an existing one throws unless `exist_ok`.
  void create_namespace(const std::vector<std::string>& ns, bool exist_ok = false,
                        const std::map<std::string, std::string>& properties = {}) const {
    auto parts = detail::c_strings(ns);
    detail::KeyValues kv(properties);
    check(lance_catalog_create_namespace(p_.get(), parts.data(), parts.size(), exist_ok, kv.get()));
  }
  /// Drop namespace `ns`: empty unless `cascade` (tables and child namespaces go first).
  void drop_namespace(const std::vector<std::string>& ns, bool cascade = false, bool missing_ok = false) const {
    auto parts = detail::c_strings(ns);
    check(lance_catalog_drop_namespace(p_.get(), parts.data(), parts.size(), cascade, missing_ok));
  }
  /// CREATE TABLE `table` in `ns` AS `data` (consumed), written as version 1.
  std::pair<Dataset, LanceWriteResult> create_table(const std::string& table, Stream&& data,
                                                    const std::vector<std::string>& ns = {},
                                                    const WriteRequest& r = {}) const {
    auto parts = detail::c_strings(ns);
    detail::WriteParams p(r);
    ArrowArrayStream in = data.release();
    LanceDataset* out = nullptr;
    LanceWriteResult res = detail::write_result();
    check(lance_catalog_create_table(p_.get(), parts.data(), parts.size(), table.c_str(), &in, p.get(), &out, &res));
    return {Dataset(out), res};
  }
  /// DROP TABLE: the table leaves the catalog and its data is deleted.
  void drop_table(const std::string& table, const std::vector<std::string>& ns = {}, bool missing_ok = false) const {
    auto parts = detail::c_strings(ns);
    check(lance_catalog_drop_table(p_.get(), parts.data(), parts.size(), table.c_str(), missing_ok));
  }

 private:
  std::unique_ptr<LanceCatalog, detail::Deleter<LanceCatalog, lance_catalog_free>> p_;
};

/// A predicate tightened while scans run (lance_dynamic_filter_*): made for one table and the
/// columns its updates may name; pass `get()` as `ScanRequest::dynamic_filter`. Every batch a
/// running scan returns after an update returned is filtered with it. Updates are thread-safe.
class DynamicFilter {
 public:
  DynamicFilter(const Dataset& ds, const std::vector<std::string>& columns) {
    auto cols = detail::c_strings(columns);
    LanceDynamicFilter* out = nullptr;
    check(lance_dynamic_filter_new(ds.get(), cols.data(), cols.size(), &out));
    p_.reset(out);
  }
  /// Replace the predicate with a SQL condition over the filter's columns (nullopt: all rows).
  void set_sql(const std::optional<std::string>& sql) const {
    check(lance_dynamic_filter_set_sql(p_.get(), sql ? sql->c_str() : nullptr));
  }
  /// Replace the predicate with `column IN (values)`; the array is moved (released by the
  /// library), the schema stays the caller's.
  void set_keys(const std::string& column, ArrowArray* values, const ArrowSchema* schema) const {
    check(lance_dynamic_filter_set_keys(p_.get(), column.c_str(), values, schema));
  }
  /// Updates accepted so far.
  uint64_t generation() const {
    uint64_t n = 0;
    check(lance_dynamic_filter_generation(p_.get(), &n));
    return n;
  }
  const LanceDynamicFilter* get() const { return p_.get(); }

 private:
  std::unique_ptr<LanceDynamicFilter, detail::Deleter<LanceDynamicFilter, lance_dynamic_filter_free>> p_;
};

/// Cancellation and a deadline for the blocking calls of the threads that enter it.
class CallContext {
 public:
  explicit CallContext(uint64_t timeout_ms = 0) : p_(check_ptr(lance_call_context_new(timeout_ms))) {}
  /// Thread-safe: fails the bound threads' calls with LANCE_ERR_CANCELLED.
  void cancel() const { check(lance_call_context_cancel(p_.get())); }
  /// Binds the context to the calling thread while it lives; unbinds on destruction.
  class Scope {
   public:
    explicit Scope(const CallContext& c) { check(lance_call_context_enter(c.p_.get())); }
    ~Scope() { lance_call_context_enter(nullptr); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
  };
  Scope enter() const { return Scope(*this); }
  /// Send the progress reports of calls bound to this context (index builds) to `f(stage,
  /// done, total, unit)`, from library threads one at a time; an empty function stops them.
  /// `f` lives in the context; it must not throw.
  void on_progress(std::function<void(const char*, uint64_t, uint64_t, const char*)> f) {
    progress_ = std::make_unique<std::function<void(const char*, uint64_t, uint64_t, const char*)>>(std::move(f));
    if (*progress_) {
      check(lance_call_context_set_progress(
          p_.get(),
          [](const char* stage, uint64_t done, uint64_t total, const char* unit, void* user) {
            (*static_cast<std::function<void(const char*, uint64_t, uint64_t, const char*)>*>(user))(stage, done,
                                                                                                   total, unit);
          },
          progress_.get()));
    } else {
      check(lance_call_context_set_progress(p_.get(), nullptr, nullptr));
    }
  }
  const LanceCallContext* get() const { return p_.get(); }
  /// Give up ownership (free with lance_call_context_free).
  LanceCallContext* release() { return p_.release(); }

 private:
  // Declared first so that it outlives the context, which may still report while it is freed.
  std::unique_ptr<std::function<void(const char*, uint64_t, uint64_t, const char*)>> progress_;
  std::unique_ptr<LanceCallContext, detail::Deleter<LanceCallContext, lance_call_context_free>> p_;
};

/// Route log records at `level` or more severe to `callback` (empty: stop). The callback runs on
/// library threads, possibly concurrently, and must be thread-safe.
inline void set_log_callback(std::function<void(int32_t level, const char* target, const char* message)> callback,
                             LanceLogLevel level = LANCE_LOG_INFO) {
  static std::function<void(int32_t, const char*, const char*)>* current = nullptr;
  if (!callback) {
    check(lance_log_set_callback(nullptr, nullptr, LANCE_LOG_OFF));
    return;
  }
  auto* next = new std::function<void(int32_t, const char*, const char*)>(std::move(callback));
  check(lance_log_set_callback(
      [](int32_t lvl, const char* target, const char* message, void* user) {
        (*static_cast<std::function<void(int32_t, const char*, const char*)>*>(user))(lvl, target, message);
      },
      next, level));
  // The previous callback may still be running on another thread: it is kept, not freed.
  current = next;
  (void)current;
}

/// Refresh the storage options of the table at `uri` through `fetch`
/// (lance_credentials_register), for a host that keeps credentials in its own secret store:
/// every open and write of the table in this process with exactly `storage_options` (which must
/// carry `expires_at_millis`, epoch ms) calls `fetch(table_uri)` for a complete new set of
/// options shortly before the current ones expire. `fetch` runs on library threads. Throwing a
/// library `Error` fails the refresh with its code (LANCE_ERR_PERMISSION_DENIED, ...); any other
/// exception with LANCE_ERR_IO. Throws `Error` when the registration is refused.
inline void register_credentials(const std::string& uri, const std::map<std::string, std::string>& storage_options,
                                 std::function<std::map<std::string, std::string>(const std::string&)> fetch) {
  using Fetch = std::function<std::map<std::string, std::string>(const std::string&)>;
  auto* f = new Fetch(std::move(fetch));
  detail::KeyValues kv(storage_options);
  const int32_t rc = lance_credentials_register(
      uri.c_str(), kv.get(),
      [](const char* table_uri, LanceStorageOptionsSink* sink, void* user) -> int32_t {
        try {
          for (const auto& [k, v] : (*static_cast<Fetch*>(user))(table_uri)) {
            const int32_t set = lance_storage_options_sink_set(sink, k.c_str(), v.c_str());
            if (set != LANCE_OK) return set;
          }
          return LANCE_OK;
        } catch (const Error& e) {
          return e.library_code() ? e.code() : static_cast<int32_t>(LANCE_ERR_IO);
        } catch (...) {
          return LANCE_ERR_IO;
        }
      },
      f, [](void* user) { delete static_cast<Fetch*>(user); });
  if (rc != LANCE_OK) {
    delete f;  // refused: the library keeps nothing
    throw Error::last();
  }
}

/// The library's counters, by name.
inline std::map<std::string, uint64_t> metrics() {
  std::map<std::string, uint64_t> out;
  for (size_t i = 0; i < lance_metric_count(); i++) {
    const char* name = nullptr;
    uint64_t value = 0;
    check(lance_metric(i, &name, &value));
    out[name] = value;
  }
  return out;
}

}  // namespace lance_host

#endif  // LANCE_HOST_HPP
