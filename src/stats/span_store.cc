#include "stats/span_store.h"

#include <algorithm>
#include <set>

namespace arenarpc::stats {
namespace {

bool SlowerFirst(const std::shared_ptr<const Span>& a, const std::shared_ptr<const Span>& b) {
  return a->latency > b->latency;
}

bool Matches(const Span& span, const SpanStore::Query& query) {
  if (!query.method.empty() && span.method != query.method) return false;
  if (span.latency < query.min_latency) return false;
  if (query.failed_only && span.error_code == 0) return false;
  if (query.trace_id) {
    const auto [high, low] = *query.trace_id;
    if (span.trace.trace_id != low) return false;
    // baidu_std carries 64 bits of a trace id: a span that came over it matches on those.
    if (high != 0 && span.trace.trace_id_high != 0 && span.trace.trace_id_high != high) {
      return false;
    }
  }
  return true;
}

}  // namespace

size_t SpanBytes(const Span& span) noexcept {
  size_t bytes = sizeof(Span) + span.method.capacity() + span.protocol.capacity() +
                 span.peer.capacity() + span.trace.tracestate.capacity() +
                 span.request_compression.capacity() + span.response_compression.capacity() +
                 span.memory_strategy.capacity() + span.message_bytes_source.capacity() +
                 span.error_text.capacity() +
                 span.annotations.capacity() * sizeof(SpanAnnotation);
  for (const SpanAnnotation& a : span.annotations) bytes += a.text.capacity();
  return bytes;
}

SpanStore::SpanStore(Limits limits) : limits_(limits) {}

SpanStore& SpanStore::Default() {
  static SpanStore* store = new SpanStore(Limits{});  // spans may finish during static destruction
  return *store;
}

void SpanStore::Add(std::shared_ptr<const Span> span) {
  const size_t bytes = SpanBytes(*span);
  std::lock_guard lock(mutex_);
  ++added_;
  if (span->error_code != 0 && limits_.max_failed > 0) {
    if (failed_.size() >= limits_.max_failed) failed_.pop_front();
    failed_.push_back(span);
  }
  if (limits_.max_slowest > 0) {
    if (slowest_.size() < limits_.max_slowest) {
      slowest_.push_back(span);
      std::push_heap(slowest_.begin(), slowest_.end(), SlowerFirst);
    } else if (span->latency > slowest_.front()->latency) {
      std::pop_heap(slowest_.begin(), slowest_.end(), SlowerFirst);
      slowest_.back() = span;
      std::push_heap(slowest_.begin(), slowest_.end(), SlowerFirst);
    }
  }
  latest_.push_back(std::move(span));
  latest_bytes_ += bytes;
  while (!latest_.empty() &&
         (latest_.size() > limits_.max_latest || latest_bytes_ > limits_.max_latest_bytes)) {
    latest_bytes_ -= SpanBytes(*latest_.front());
    latest_.pop_front();
    ++evicted_;
  }
}

std::vector<std::shared_ptr<const Span>> SpanStore::Find(const Query& query) const {
  std::vector<std::shared_ptr<const Span>> found;
  std::lock_guard lock(mutex_);
  auto take_newest_first = [&](const std::deque<std::shared_ptr<const Span>>& ring) {
    for (auto it = ring.rbegin(); it != ring.rend() && found.size() < query.limit; ++it) {
      if (Matches(**it, query)) found.push_back(*it);
    }
  };
  switch (query.view) {
    case View::kLatest:
      take_newest_first(latest_);
      break;
    case View::kFailed:
      take_newest_first(failed_);
      break;
    case View::kSlowest: {
      std::vector<std::shared_ptr<const Span>> sorted = slowest_;
      std::sort(sorted.begin(), sorted.end(), SlowerFirst);
      for (auto& span : sorted) {
        if (found.size() >= query.limit) break;
        if (Matches(*span, query)) found.push_back(std::move(span));
      }
      break;
    }
  }
  return found;
}

std::vector<std::shared_ptr<const Span>> SpanStore::FindTrace(uint64_t trace_id_high,
                                                              uint64_t trace_id) const {
  Query query;
  query.trace_id = std::make_pair(trace_id_high, trace_id);
  std::set<const Span*> seen;
  std::vector<std::shared_ptr<const Span>> found;
  {
    std::lock_guard lock(mutex_);
    for (const auto* views : {&latest_, &failed_}) {
      for (const auto& span : *views) {
        if (Matches(*span, query) && seen.insert(span.get()).second) found.push_back(span);
      }
    }
    for (const auto& span : slowest_) {
      if (Matches(*span, query) && seen.insert(span.get()).second) found.push_back(span);
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a->start_time < b->start_time;
  });
  return found;
}

SpanStore::Counts SpanStore::counts() const {
  std::lock_guard lock(mutex_);
  return Counts{latest_.size(), latest_bytes_, slowest_.size(), failed_.size(), added_, evicted_};
}

void SpanStore::Clear() {
  std::lock_guard lock(mutex_);
  latest_.clear();
  latest_bytes_ = 0;
  slowest_.clear();
  failed_.clear();
}

}  // namespace arenarpc::stats
