#pragma once
// Per-method and server-wide counters of an arenarpc::Server (snapshots; see Server::GetMethodStats).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arenarpc/memory/message_memory.h"

namespace arenarpc {

// Calls of one method that ended in a recent window: the current second and the seconds before it
// (last_10s: 9 whole seconds + the current one). Percentiles are within 3.1 % of the exact ones
// (coarser buckets than the since-Start() ones; docs/observability.md).
struct WindowStats {
  int seconds = 0;       // the window's nominal length
  double covered_seconds = 0;  // what it spans now (less right after Start(); at least 1)
  uint64_t calls = 0;    // handler invocations completed in the window
  uint64_t errors = 0;   // ... of which failed
  double qps = 0;        // calls / covered_seconds
  int64_t latency_p50_us = 0, latency_p90_us = 0, latency_p99_us = 0, latency_p999_us = 0,
          latency_max_us = 0;
  double latency_mean_us = 0;
};

// Failed or rejected calls with one error code. code 0 counts every code that is not one of
// brpc's (error_codes.h), e.g. a handler's own codes.
struct ErrorCodeCount {
  int code = 0;
  uint64_t count = 0;
};

// One method's counters since Start(). Latencies in microseconds, from the request's bytes being
// read off the socket to its reply being queued (done->Run()), so time spent queued for a thread
// counts; only calls that reached the handler count. queue_* is the queued part alone.
struct MethodStats {
  std::string full_name;        // "pkg.Service.Method"; empty when the method is unknown
  std::string memory_mode;      // strategy serving this method ("heap", "arena", ...)
  uint64_t calls = 0;           // handler invocations completed (done->Run() ran)
  uint64_t errors = 0;          // ... of which failed (handler SetFailed or reply not serializable)
  uint64_t rejected = 0;        // answered without running the handler (EREQUEST, EOVERCROWDED,
                                // ERPCTIMEDOUT before start)
  int64_t in_flight = 0;        // handler started, done->Run() not yet
  int64_t latency_p50_us = 0, latency_p80_us = 0, latency_p90_us = 0, latency_p99_us = 0,
          latency_p999_us = 0, latency_max_us = 0;
  double latency_mean_us = 0;
  int64_t queue_p50_us = 0, queue_p99_us = 0, queue_max_us = 0;
  uint64_t latency_sum_us = 0;  // of the `calls` latencies
  int64_t max_in_flight = 0;    // the most handlers of this method running at once
  WindowStats last_10s, last_60s;
  std::vector<ErrorCodeCount> errors_by_code;  // errors and rejected by code; codes counted once+
  // Arena bytes (protobuf Arena::SpaceAllocated()) of this method's calls, summed over calls that
  // had an arena ("arena", "paged"), measured once the response was serialized.
  uint64_t arena_bytes = 0;
  uint64_t arena_calls = 0;
  // Counters of the strategy serving this method. The strategy (one per mode per server) is shared
  // by every method configured with the same mode, so these are that strategy's totals.
  memory::MemoryStats memory;
  // This method's own share of them (MethodMemory::stats()): its pairs, and for reuse the pools
  // of its request and response types; what the whole strategy shares (its page pool) is 0 here.
  memory::MemoryStats method_memory;
  // Equal for the methods that share one strategy object (an opaque identity, 0 if none).
  uintptr_t memory_strategy_id = 0;
  // memory_mode "auto": the candidate serving the method now, and the figures it was chosen by.
  std::optional<memory::MemoryChoice> memory_choice;
  // Response fields whose declaration keeps the exact reuse strategy from keeping their subtree
  // (proto3 singular sub-messages without `optional`), largest share of a response first.
  std::vector<memory::PresenceAdvice> presence_advice;
};

// Server-wide counters since Start().
struct ServerStats {
  uint64_t connections_accepted = 0;
  uint64_t connections_open = 0;
  uint64_t connections_closed_idle = 0;  // closed by idle_timeout_sec
  uint64_t connections_closed_read_timeout = 0;  // a frame did not complete within read_timeout_ms
  uint64_t connections_closed_first_byte_timeout = 0;  // nothing read within first_byte_timeout_ms
  uint64_t connections_closed_write_timeout = 0;  // replies found no room for write_timeout_ms
  uint64_t connections_rejected = 0;     // accepted past max_connections and closed
  uint64_t malformed_frames = 0;         // framing/meta errors: the connection was closed
  uint64_t requests = 0;                 // request frames decoded
  uint64_t rejected_stopping = 0;        // ELOGOFF
  uint64_t rejected_limit = 0;           // ELIMIT (max_concurrency or max_queued_requests)
  uint64_t rejected_queue_wait = 0;      // ... of which the wait queued ahead would outlast the
                                         // call's deadline (its timeout_ms / grpc-timeout), or
                                         // a standing queue's bound (docs/server.md "Overload")
  uint64_t rejected_unknown = 0;         // ENOSERVICE / ENOMETHOD
  uint64_t rejected_overcrowded = 0;     // EOVERCROWDED
  uint64_t rejected_timed_out = 0;       // ERPCTIMEDOUT: the client's deadline passed while queued
  uint64_t canceled_before_start = 0;    // canceled by the client (RST_STREAM, connection closed)
                                         // while queued: dropped, the handler not run
  uint64_t rejected_fiber_limit = 0;     // ELIMIT: max_fibers were alive
  uint64_t read_pauses = 0;              // times a connection's reading paused (backpressure)
  uint64_t refused_bytes_unread = 0;     // bytes of large requests refused from their head,
                                         // discarded without being read (docs/server.md)
  uint64_t rejected_request_memory = 0;  // EREQUEST: over max_request_memory once parsed
  uint64_t rejected_message_memory = 0;  // ELIMIT: over max_inflight_message_memory
  uint64_t message_memory_in_flight = 0;  // estimated message memory of the calls in flight
  uint64_t message_memory_peak = 0;       // ... its highest value
  uint64_t message_memory_trims = 0;      // times freed heap was given back after a spike
  uint64_t unwritten_held_bytes = 0;     // memory held by unsent replies, all connections
  int64_t in_flight = 0;                 // calls admitted and not yet answered
  int64_t queued = 0;                    // ... of which waiting for a thread
  int64_t fibers = 0;                    // fibers alive (handlers running or waiting)
  int concurrency_limit = 0;             // current max_concurrency (the adaptive one's too); 0 = none
  uint64_t tls_handshakes = 0;           // TLS handshakes completed
  uint64_t tls_failures = 0;             // TLS connections closed by a failed handshake or record
  uint64_t tls_refused = 0;              // clear-text connections closed under tls.require_tls
  uint64_t rejected_auth = 0;            // ERPCAUTH: ServerOptions::auth refused the credential
  // ServerOptions::capture (docs/capture.md); all 0 while it is off.
  uint64_t capture_sampled = 0;          // requests sampled
  uint64_t capture_written = 0;          // ... written to a dump file
  uint64_t capture_dropped = 0;          // ... dropped: the writer's queue was full
  uint64_t capture_write_errors = 0;     // ... lost to a failed open or write
  uint64_t capture_files_opened = 0;
  uint64_t capture_queued_bytes = 0;     // waiting for the writer now
};

}  // namespace arenarpc
