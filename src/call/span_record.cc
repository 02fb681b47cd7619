#include "call/span_record.h"

#include <cstdarg>
#include <cstdio>
#include <vector>

#include "arenarpc/controller.h"
#include "call/controller_access.h"
#include "stats/span_store.h"
#include "util/sample_budget.h"

namespace arenarpc {
namespace internal {
namespace {

constexpr int kDefaultSpansPerSecond = 10;

struct Sinks {
  std::mutex mutex;
  std::vector<std::shared_ptr<SpanSink>> list;
};

Sinks& AllSinks() {
  static Sinks* sinks = new Sinks;  // never destroyed: spans may finish during static destruction
  return *sinks;
}

}  // namespace

// Constant-initialized (constexpr constructor): ready before any static constructor runs.
constinit util::SampleBudget span_budget(kDefaultSpansPerSecond);

SpanRecord::SpanRecord(SpanKind kind, Clock::time_point start) : start_(start) {
  span_.kind = kind;
  span_.start_time = std::chrono::system_clock::now() -
                     std::chrono::duration_cast<std::chrono::system_clock::duration>(
                         Clock::now() - start);
}

void SpanRecord::Mark(SpanPhase phase, Clock::time_point at) noexcept {
  span_.phases[static_cast<size_t>(phase)] = std::max(at - start_, Clock::duration::zero());
}

void SpanRecord::SetError(int code, std::string_view text) {
  span_.error_code = code;
  span_.error_text.assign(text.substr(0, kMaxErrorTextBytes));
}

void SpanRecord::SetTrace(const TraceContext& call_trace) {
  if (call_trace.valid()) {
    trace_ = call_trace;
  } else if (const SpanRecord* parent = CurrentSpan();
             parent != nullptr && parent != this && parent->trace_.valid()) {
    trace_ = parent->trace_.Child();
  } else {
    trace_ = TraceContext::NewRoot();
  }
}

void SpanRecord::Annotate(std::string text) {
  const auto offset = Clock::now() - start_;
  if (text.size() > kMaxAnnotationBytes) text.resize(kMaxAnnotationBytes);
  std::lock_guard lock(mutex_);
  if (finished_) return;
  if (span_.annotations.size() >= kMaxAnnotations) {
    ++span_.annotations_dropped;
    return;
  }
  span_.annotations.push_back(SpanAnnotation{offset, std::move(text)});
}

void SpanRecord::Finish(Clock::time_point end) {
  std::shared_ptr<const Span> span;
  {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    finished_ = true;
    span_.latency = std::max(end - start_, Clock::duration::zero());
    span_.trace = trace_;
    span = std::make_shared<const Span>(std::move(span_));
  }
  // Sinks first: a span found in the store has been handed to every sink that was registered.
  std::vector<std::shared_ptr<SpanSink>> sinks;
  {
    Sinks& all = AllSinks();
    std::lock_guard lock(all.mutex);
    sinks = all.list;
  }
  for (const auto& sink : sinks) sink->Export(span);
  stats::SpanStore::Default().Add(span);
}

std::shared_ptr<SpanRecord> NewSpanRecord(SpanKind kind, SpanRecord::Clock::time_point start) {
  return std::make_shared<SpanRecord>(kind, start);
}

std::shared_ptr<SpanRecord> SampleClientSpan(SpanRecord::Clock::time_point start) {
  if (CurrentSpan() != nullptr && span_budget.per_second() > 0) {
    return std::make_shared<SpanRecord>(SpanKind::kClient, start);
  }
  return SampleSpan(SpanKind::kClient, start);
}

namespace {

void AnnotateV(SpanRecord* record, const char* format, va_list args) {
  char buffer[SpanRecord::kMaxAnnotationBytes + 1];
  const int n = std::vsnprintf(buffer, sizeof(buffer), format, args);
  if (n < 0) return;
  record->Annotate(std::string(buffer, std::min<size_t>(n, SpanRecord::kMaxAnnotationBytes)));
}

}  // namespace
}  // namespace internal

std::string_view SpanPhaseName(SpanPhase phase) noexcept {
  switch (phase) {
    case SpanPhase::kReceived: return "received";
    case SpanPhase::kAdmitted: return "admitted";
    case SpanPhase::kTakenByThread: return "taken_by_thread";
    case SpanPhase::kParsed: return "parsed";
    case SpanPhase::kHandlerStarted: return "handler_started";
    case SpanPhase::kHandlerEnded: return "handler_ended";
    case SpanPhase::kSerialized: return "serialized";
    case SpanPhase::kReplyQueued: return "reply_queued";
    case SpanPhase::kFirstByteWritten: return "first_byte_written";
    case SpanPhase::kLastByteWritten: return "last_byte_written";
    case SpanPhase::kStarted: return "started";
    case SpanPhase::kSent: return "sent";
    case SpanPhase::kReplyReceived: return "reply_received";
  }
  return "unknown";
}

void AddSpanSink(std::shared_ptr<SpanSink> sink) {
  if (!sink) return;
  internal::Sinks& all = internal::AllSinks();
  std::lock_guard lock(all.mutex);
  all.list.push_back(std::move(sink));
}

void RemoveSpanSink(const SpanSink* sink) {
  internal::Sinks& all = internal::AllSinks();
  std::lock_guard lock(all.mutex);
  std::erase_if(all.list, [sink](const auto& s) { return s.get() == sink; });
}

void SetRpczSpansPerSecond(int spans_per_second) {
  internal::span_budget.set_per_second(std::max(spans_per_second, 0));
}

int RpczSpansPerSecond() noexcept { return internal::span_budget.per_second(); }

void Annotate(const char* format, ...) {
  internal::SpanRecord* record = internal::CurrentSpan();
  if (record == nullptr) return;
  va_list args;
  va_start(args, format);
  internal::AnnotateV(record, format, args);
  va_end(args);
}

void Annotate(const Controller* controller, const char* format, ...) {
  if (controller == nullptr) return;
  internal::SpanRecord* record = internal::ControllerAccess::span(*controller);
  if (record == nullptr) return;
  va_list args;
  va_start(args, format);
  internal::AnnotateV(record, format, args);
  va_end(args);
}

}  // namespace arenarpc
