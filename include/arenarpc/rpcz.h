#pragma once
// rpcz: sampled spans of calls, server side and client side (docs/observability.md, "rpcz").
//
// A sampled call records the time of each of its phases, its wire bytes, its memory strategy and
// what its messages held, its error and the annotations its handler adds:
//
//   TRACEPRINTF("looked up %d rows", n);              // the current handler's call (brpc's macro)
//   ARENARPC_TRACEPRINTF(cntl, "cache %s", "miss");   // a given Controller's call
//
// Calls are sampled by a per-second budget shared by the whole process (SetRpczSpansPerSecond,
// or the live setting `rpcz_spans_per_second`), so the cost does not grow with the call rate;
// a call made from a sampled handler is always sampled, so a trace's tree is complete. Finished
// spans go to the /rpcz page's bounded store and to every SpanSink added.

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arenarpc/trace_context.h"

namespace arenarpc {

class Controller;

enum class SpanKind : uint8_t { kServer, kClient };

// The phases a span may pass, in the order they happen. A server call: kReceived .. kLastByteWritten;
// a client call: kStarted, kSerialized, kSent, kReplyReceived, kParsed. A phase a call did not
// reach (an error before the handler, a reply written later than the span could follow) is unset.
enum class SpanPhase : uint8_t {
  kReceived,          // server: the request's frame was read off the socket
  kAdmitted,          // server: admission took the call (a place in the server's queue)
  kTakenByThread,     // server: a thread took the call off the queue
  kParsed,            // server: request parsed; client: reply parsed into the response
  kHandlerStarted,    // server
  kHandlerEnded,      // server: done->Run()
  kSerialized,        // server: reply packed; client: request serialized
  kReplyQueued,       // server: reply handed to the connection
  kFirstByteWritten,  // server: the kernel took the reply's first byte
  kLastByteWritten,   // server: ... and its last
  kStarted,           // client: CallMethod
  kSent,              // client: the (last) attempt handed to its connection
  kReplyReceived,     // client: the reply's frame decoded
};
inline constexpr size_t kSpanPhaseCount = 13;
std::string_view SpanPhaseName(SpanPhase phase) noexcept;

struct SpanAnnotation {
  std::chrono::nanoseconds offset{0};  // since the span's start
  std::string text;
};

// One finished call. Immutable once handed to the store and the sinks.
struct Span {
  SpanKind kind = SpanKind::kServer;
  std::string method;    // "pkg.Service.Method"
  std::string protocol;  // "baidu_std", "http", "grpc"
  std::string peer;      // the other side's "ip:port"
  TraceContext trace;    // trace id, this span's id, its parent's
  std::chrono::system_clock::time_point start_time;  // wall clock, when the span started
  std::chrono::nanoseconds latency{0};               // start to the last phase reached
  // Since the span's start, per phase; nullopt: not reached.
  std::array<std::optional<std::chrono::nanoseconds>, kSpanPhaseCount> phases{};
  uint64_t request_bytes = 0;   // on the wire (compressed as sent)
  uint64_t response_bytes = 0;  // on the wire (server: the reply frame; client: its payload)
  std::string request_compression;   // "none", "gzip", ...
  std::string response_compression;
  // Server: the method's memory strategy and what the call's messages held, in the strategy's
  // own account ("arena": the arena's allocated bytes; "reuse": the pooled objects' estimate;
  // "space_used": SpaceUsedLong() of both messages, walked for this sampled call).
  std::string memory_strategy;
  std::optional<uint64_t> message_bytes;
  std::string message_bytes_source;
  int error_code = 0;
  std::string error_text;
  std::vector<SpanAnnotation> annotations;
  uint32_t annotations_dropped = 0;  // past the per-span bound (docs/observability.md)

  const std::optional<std::chrono::nanoseconds>& phase(SpanPhase p) const noexcept {
    return phases[static_cast<size_t>(p)];
  }
};

// Receives every finished span, on the thread that finished the call (an I/O or handler thread):
// it must not block (queue and return). Add sinks at start-up; Export may run concurrently.
class SpanSink {
 public:
  virtual ~SpanSink() = default;
  virtual void Export(const std::shared_ptr<const Span>& span) = 0;
};
void AddSpanSink(std::shared_ptr<SpanSink> sink);
void RemoveSpanSink(const SpanSink* sink);

// Spans sampled per second, process-wide (server and client calls together); 0 turns rpcz off.
// Default 10 (docs/observability.md states its cost).
void SetRpczSpansPerSecond(int spans_per_second);
int RpczSpansPerSecond() noexcept;

// Adds a note to the sampled span of the call whose handler runs on this fiber (or thread, inside
// a ScopedTrace of that handler). A no-op when the call is not sampled: the text is not even
// formatted then.
void Annotate(const char* format, ...) __attribute__((format(printf, 1, 2)));
void Annotate(const Controller* controller, const char* format, ...)
    __attribute__((format(printf, 2, 3)));

}  // namespace arenarpc

#define ARENARPC_TRACEPRINTF(controller_ptr, ...) ::arenarpc::Annotate((controller_ptr), __VA_ARGS__)
#ifndef TRACEPRINTF
#define TRACEPRINTF(...) ::arenarpc::Annotate(__VA_ARGS__)
#endif
