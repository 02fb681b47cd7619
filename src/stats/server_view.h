#pragma once
// ServerView: the one face a running server shows its observers (the built-in pages, /vars,
// /metrics). Every call returns copies taken at that moment; nothing of the server is held or
// locked past it. A view outlives its server: then available() is false and the copies are empty.

#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

#include "arenarpc/latency_histogram.h"
#include "arenarpc/method_stats.h"
#include "arenarpc/server.h"
#include "stats/connection_info.h"
#include "stats/memory_series.h"
#include "stats/stream_info.h"

namespace arenarpc::stats {

// One method: its stats and what the pages draw of it beyond them.
struct MethodView {
  MethodStats stats;
  std::array<uint64_t, 60> calls_per_second{};  // the last 60 whole seconds, oldest first
  LatencyHistogram latency;                     // socket -> reply queued, since start
  // Held bytes and CPU per call (sampled calls), the last 10 minutes in 10 s points, oldest first.
  std::array<MemoryPoint, MemorySeries::kPoints> memory_points{};
  MethodStreams streams;  // its STRM streams and gRPC streaming calls
};

class ServerView {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~ServerView() = default;

  virtual bool available() const = 0;
  virtual ServerStats Server() const = 0;
  // Every registered method, sorted by full name.
  virtual std::vector<MethodView> Methods(Clock::time_point now) const = 0;
  // One row per open connection, by id, with its open streams.
  virtual std::vector<ConnectionInfo> Connections() const = 0;
  virtual ServerOptions Options() const = 0;
};

}  // namespace arenarpc::stats
