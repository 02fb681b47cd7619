#pragma once
// ServerCounters: the server-wide event counts that /status, /vars and /metrics show (read through
// server_snapshot.h), and the rate-limited logs of the events worth a line. Lock-free: bumped from
// any thread.

#include <atomic>
#include <cstdint>

#include "util/rate_limited_log.h"

namespace arenarpc::server {

struct ServerCounters {
  std::atomic<uint64_t> connections_accepted{0}, connections_closed_idle{0},
      connections_closed_read_timeout{0}, connections_closed_first_byte_timeout{0},
      connections_closed_write_timeout{0}, connections_rejected{0}, malformed_frames{0},
      requests{0}, rejected_stopping{0}, rejected_limit{0}, rejected_unknown{0},
      rejected_overcrowded{0}, rejected_timed_out{0}, read_pauses{0}, refused_bytes_unread{0}, rejected_fiber_limit{0},
      tls_handshakes{0}, tls_failures{0}, tls_refused{0}, rejected_auth{0},
      rejected_queue_wait{0}, canceled_before_start{0};
  util::RateLimitedLog malformed_log;  // bad input, refused connections
  util::RateLimitedLog timeout_log;    // connections closed by a timeout
};

}  // namespace arenarpc::server
