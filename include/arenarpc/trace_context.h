#pragma once
// TraceContext: the distributed-trace identity of one call, carried on every protocol —
// baidu_std's RpcMeta trace_id / span_id / parent_span_id (as brpc sends them), and W3C trace
// context (`traceparent`, `tracestate`) on HTTP and gRPC. brpc's HTTP headers x-bd-trace-id,
// x-bd-span-id and x-bd-parent-span-id are read too.
//
// A server call's context is on its Controller (Controller::trace()). While its handler runs, the
// context is also the fiber's current one (CurrentTrace()): a call the handler makes on a Channel
// — sync or async, from the handler's fiber — whose Controller carries no trace of its own becomes
// a child span: same trace id, parent_span_id = the handler's span, a new span id. Work the
// handler hands to threads of its own carries the context with a ScopedTrace.
//
//   arenarpc::ScopedTrace scope(cntl->trace());   // on the other thread
//   channel.CallMethod(...);                        // continues the handler's trace

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace arenarpc {

struct TraceContext {
  // W3C trace-id is 128 bits: trace_id_high:trace_id. baidu_std carries 64 (trace_id; high 0).
  uint64_t trace_id_high = 0;
  uint64_t trace_id = 0;
  uint64_t span_id = 0;         // this call's span
  uint64_t parent_span_id = 0;  // the caller's span; 0 at the root
  uint8_t flags = 0;            // W3C trace-flags (bit 0: sampled)
  std::string tracestate;       // W3C tracestate, passed on unchanged

  bool valid() const noexcept { return trace_id != 0 || trace_id_high != 0; }
  // The context of a call made from this one: same trace, parent = this span, a new span id.
  TraceContext Child() const;
  // A new trace (random ids), sampled.
  static TraceContext NewRoot();
};

// traceparent "00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>" as W3C Trace Context level 1
// defines it (lower-case hex; an all-zero trace-id or parent-id is invalid; version ff is invalid;
// a higher version may carry more fields after a '-'). The parsed context is the RECEIVER's: its
// parent_span_id is the sender's span and its span_id a new one. nullopt: not a valid header.
std::optional<TraceContext> ParseTraceparent(std::string_view header);
// The header a call with `context` sends: its own span_id as the parent-id.
std::string FormatTraceparent(const TraceContext& context);

// The context of the server call whose handler runs on this fiber (outside fibers: on this
// thread, inside a ScopedTrace), or nullptr.
const TraceContext* CurrentTrace() noexcept;

// Makes `context` current on this fiber or thread for the scope (the previous one is restored).
class ScopedTrace {
 public:
  explicit ScopedTrace(const TraceContext& context);
  ~ScopedTrace();
  ScopedTrace(const ScopedTrace&) = delete;
  ScopedTrace& operator=(const ScopedTrace&) = delete;

 private:
  TraceContext context_;
  const TraceContext* previous_;
};

}  // namespace arenarpc
