#pragma once
// Trace context in HTTP headers and gRPC metadata. W3C `traceparent` / `tracestate` are read and
// written; brpc's HTTP headers x-bd-trace-id / x-bd-span-id / x-bd-parent-span-id (decimal, the
// ids of the sender's span, which the receiver shares as on baidu_std) are read when no
// traceparent came. An invalid header is ignored: the call has no trace, as if none was sent.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arenarpc/trace_context.h"

namespace arenarpc::internal {

inline constexpr std::string_view kTraceparentHeader = "traceparent";
inline constexpr std::string_view kTracestateHeader = "tracestate";

// Fed a request's fields one by one (lower-case names), then asked for the receiver's context.
class TraceHeaderReader {
 public:
  void Offer(std::string_view name, std::string_view value) {
    // Most fields are not trace fields: one comparison of the first character rules them out.
    if (name.empty() || (name[0] != 't' && name[0] != 'x')) return;
    OfferTraceField(name, value);
  }
  // The context the request carried; invalid() when none (or none valid) did.
  TraceContext Take();

 private:
  void OfferTraceField(std::string_view name, std::string_view value);

  std::string_view traceparent_, tracestate_, bd_trace_id_, bd_span_id_, bd_parent_span_id_;
};

// The fields a call with `context` sends (none without a valid trace and span id).
void AppendTraceHeaders(const TraceContext& context,
                        std::vector<std::pair<std::string, std::string>>* fields);

}  // namespace arenarpc::internal
