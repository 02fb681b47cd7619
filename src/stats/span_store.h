#pragma once
// SpanStore: the finished rpcz spans the /rpcz page shows, bounded. Three views over the same
// spans: the latest (a ring bounded by count and bytes), the slowest (the N longest seen since
// start or Clear), the failed (a ring of the latest failures). Written once per sampled call
// (a budget per second), read by the page: one mutex.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "arenarpc/rpcz.h"

namespace arenarpc::stats {

class SpanStore {
 public:
  struct Limits {
    size_t max_latest = 2048;             // spans in the latest ring
    size_t max_latest_bytes = 8u << 20;   // ... and their bytes (SpanBytes)
    size_t max_slowest = 64;
    size_t max_failed = 256;
  };
  enum class View { kLatest, kSlowest, kFailed };
  struct Query {
    View view = View::kLatest;
    std::string method;                      // "" = any; else exact "pkg.Service.Method"
    std::chrono::nanoseconds min_latency{0};
    bool failed_only = false;
    std::optional<std::pair<uint64_t, uint64_t>> trace_id;  // {high, low}; high 0, or a span with high 0 (baidu_std): the low 64 bits decide
    size_t limit = 100;
  };
  struct Counts {
    size_t latest = 0, latest_bytes = 0, slowest = 0, failed = 0;
    uint64_t added = 0, evicted = 0;
  };

  explicit SpanStore(Limits limits);
  // The process's store (finished spans go here: call/span_record.cc).
  static SpanStore& Default();

  void Add(std::shared_ptr<const Span> span);
  // Newest first (kSlowest: slowest first), filtered, at most query.limit.
  std::vector<std::shared_ptr<const Span>> Find(const Query& query) const;
  // Every span of one trace the store holds (any view), by start time.
  std::vector<std::shared_ptr<const Span>> FindTrace(uint64_t trace_id_high,
                                                     uint64_t trace_id) const;
  Counts counts() const;
  void Clear();

 private:
  const Limits limits_;
  mutable std::mutex mutex_;
  std::deque<std::shared_ptr<const Span>> latest_;  // oldest first
  size_t latest_bytes_ = 0;
  std::vector<std::shared_ptr<const Span>> slowest_;  // a min-heap by latency
  std::deque<std::shared_ptr<const Span>> failed_;    // oldest first
  uint64_t added_ = 0, evicted_ = 0;
};

// What one span holds in memory, about.
size_t SpanBytes(const Span& span) noexcept;

}  // namespace arenarpc::stats
