#pragma once
// SpanRecord: a sampled call's span while the call runs. The call's owner marks phases and fills
// the facts (one thread at a time, in the call's order); the handler may annotate from any thread;
// Finish() hands the span, once, to the rpcz store and the SpanSinks (arenarpc/rpcz.h). A call
// that is not sampled has no record: every hook is a null check.

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "arenarpc/rpcz.h"
#include "util/sample_budget.h"

namespace arenarpc::internal {

class SpanRecord {
 public:
  using Clock = std::chrono::steady_clock;
  // Bounds of one span (docs/observability.md states the store's bound from them).
  static constexpr size_t kMaxAnnotations = 64;
  static constexpr size_t kMaxAnnotationBytes = 512;
  static constexpr size_t kMaxErrorTextBytes = 1024;

  SpanRecord(SpanKind kind, Clock::time_point start);

  // The owner's fields (not annotations: Annotate()).
  Span& span() noexcept { return span_; }
  Clock::time_point start() const noexcept { return start_; }
  void Mark(SpanPhase phase, Clock::time_point at) noexcept;
  void Mark(SpanPhase phase) noexcept { Mark(phase, Clock::now()); }
  bool reached(SpanPhase phase) const noexcept { return span_.phase(phase).has_value(); }
  void SetError(int code, std::string_view text);
  // The span's ids: the call's trace context when it has one. Otherwise ids of the span's own,
  // never sent (sampling does not change what a call sends): a child of the handler's span when
  // made from a sampled handler's fiber, else a new root — so the tree on /rpcz still links the
  // calls a handler made to it.
  // Once, before the handler runs (the calls it makes read it from then on).
  void SetTrace(const TraceContext& call_trace);
  const TraceContext& trace() const noexcept { return trace_; }
  // Any thread. Dropped (and counted) past kMaxAnnotations; cut at kMaxAnnotationBytes; ignored
  // once the span finished.
  void Annotate(std::string text);
  // The span ends at `end` (its latency); later calls do nothing.
  void Finish(Clock::time_point end);
  void Finish() { Finish(Clock::now()); }

 private:
  const Clock::time_point start_;
  std::mutex mutex_;  // annotations, finished_
  bool finished_ = false;
  TraceContext trace_;  // copied into the span by Finish()
  Span span_;
};

// The process's budget of spans per second (arenarpc::SetRpczSpansPerSecond).
extern util::SampleBudget span_budget;
std::shared_ptr<SpanRecord> NewSpanRecord(SpanKind kind, SpanRecord::Clock::time_point start);

// A new record when this call is sampled: the budget allows one. Inline: every call asks.
inline std::shared_ptr<SpanRecord> SampleSpan(SpanKind kind, SpanRecord::Clock::time_point start) {
  if (!span_budget.Take(start)) return nullptr;
  return NewSpanRecord(kind, start);
}
// A client call: sampled when the handler it is made from is (a trace's tree stays whole), else
// as any other call.
std::shared_ptr<SpanRecord> SampleClientSpan(SpanRecord::Clock::time_point start);

// The handler's span on its fiber (kept in trace_context.cc's fiber slot, beside its trace).
void SetHandlerSpan(std::shared_ptr<SpanRecord> span);
SpanRecord* CurrentSpan() noexcept;

}  // namespace arenarpc::internal
