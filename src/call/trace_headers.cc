#include "call/trace_headers.h"

#include <charconv>

namespace arenarpc::internal {
namespace {

uint64_t ParseDecimal(std::string_view text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() ? value : 0;
}

}  // namespace

void TraceHeaderReader::OfferTraceField(std::string_view name, std::string_view value) {
  if (name == kTraceparentHeader) {
    if (traceparent_.empty()) traceparent_ = value;  // the first of several (W3C: one)
  } else if (name == kTracestateHeader) {
    if (tracestate_.empty()) tracestate_ = value;
  } else if (name == "x-bd-trace-id") {
    bd_trace_id_ = value;
  } else if (name == "x-bd-span-id") {
    bd_span_id_ = value;
  } else if (name == "x-bd-parent-span-id") {
    bd_parent_span_id_ = value;
  }
}

TraceContext TraceHeaderReader::Take() {
  TraceContext context;
  if (!traceparent_.empty()) {
    if (std::optional<TraceContext> parsed = ParseTraceparent(traceparent_)) {
      context = std::move(*parsed);
      // W3C: 32 list members of at most 256 characters each; a longer one is not passed on.
      constexpr size_t kMaxTracestate = 32 * 257;
      if (tracestate_.size() <= kMaxTracestate) context.tracestate = std::string(tracestate_);
    }
  } else if (!bd_trace_id_.empty()) {
    context.trace_id = ParseDecimal(bd_trace_id_);
    context.span_id = ParseDecimal(bd_span_id_);
    context.parent_span_id = ParseDecimal(bd_parent_span_id_);
    if (!context.valid()) context = TraceContext();
  }
  *this = TraceHeaderReader();
  return context;
}

void AppendTraceHeaders(const TraceContext& context,
                        std::vector<std::pair<std::string, std::string>>* fields) {
  if (!context.valid() || context.span_id == 0) return;  // W3C: the parent-id is never 0
  fields->emplace_back(std::string(kTraceparentHeader), FormatTraceparent(context));
  if (!context.tracestate.empty()) {
    fields->emplace_back(std::string(kTracestateHeader), context.tracestate);
  }
}

}  // namespace arenarpc::internal
