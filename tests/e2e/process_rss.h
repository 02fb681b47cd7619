#pragma once
// The test process's resident memory (/proc/self/status), for tests that bound what the server
// in it holds. Sanitizers' shadow memory and quarantine hold memory: such builds do not measure.

#include <cstdint>
#include <fstream>
#include <string>

#include "arenarpc/server.h"

namespace arenarpc::e2e {

#if defined(ARENARPC_SANITIZED)
inline constexpr bool kMeasuresRss = false;
#else
inline constexpr bool kMeasuresRss = true;
#endif

inline uint64_t StatusKiB(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return std::stoull(line.substr(prefix.size()));
  }
  return 0;
}
inline uint64_t RssBytes() { return StatusKiB("VmRSS") << 10; }
inline uint64_t PeakRssBytes() { return StatusKiB("VmHWM") << 10; }
inline void ResetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }

// The bounds docs/server.md ("Backpressure and the memory bound") and docs/grpc.md state, from
// the options a test sets: what one connection may hold whatever its client sends, and what the
// process adds besides its connections. `replies`: the replies of the calls admitted on the
// connection (the handlers' output, which the docs leave to them).

// A baidu_std connection (streams included: their inboxes and a few hundred bytes each).
inline uint64_t BaiduStdConnectionBound(const ServerOptions& o, uint64_t replies = 0) {
  return o.max_body_size + 12 + (256u << 10)               // a frame received + one wakeup's reads
         + o.max_queued_request_bytes + o.max_body_size    // requests decoded and not started
         + o.max_unwritten_bytes + replies                 // unsent replies
         + (8u << 20)                                      // EOVERCROWDED answers
         + o.max_stream_unconsumed_bytes                   // streams' unconsumed input
         + uint64_t(o.max_streams_per_connection) * 1024;  // streams' state
}

// An HTTP/1.1 connection: as baidu_std's, its header block (max_http_header_size) besides.
inline uint64_t HttpConnectionBound(const ServerOptions& o, uint64_t replies = 0) {
  return BaiduStdConnectionBound(o, replies) + o.max_http_header_size;
}

// An HTTP/2 connection: raw input, request messages (the budget, one message and the connection
// window; 64 KiB more decoded per streaming call), kept header fields, replies held for windows
// and unsent output.
inline uint64_t H2ConnectionBound(const ServerOptions& o, uint64_t replies = 0) {
  const uint64_t streams = static_cast<uint64_t>(o.max_queued_requests_per_connection);
  return o.max_body_size + 12 + (256u << 10) + o.max_queued_request_bytes + o.max_body_size +
         o.http2_connection_window + streams * (64u << 10) + streams * o.max_http_header_size + o.max_unwritten_bytes +
         replies;
}

// The process besides its connections: the I/O page cache (64 MiB at most), the memory
// strategies' caches (the page pool; the reuse pools of the `message_types` in `reuse` and
// `auto`), and the stacks of `fibers` handlers running at once.
inline uint64_t ProcessCachesBound(const ServerOptions& o, int fibers, int message_types = 4) {
  const bool pools = o.memory_mode == memory::MemoryMode::kReuse ||
                     o.memory_mode == memory::MemoryMode::kAuto;
  return (64u << 20) + uint64_t(o.memory.page_size) * o.memory.page_cache_capacity +
         (pools ? uint64_t(message_types) * o.memory.reuse.max_pool_bytes : 0) +
         uint64_t(fibers) * (o.fiber_stack_size + 4096);
}

}  // namespace arenarpc::e2e
