#pragma once
// ServerState: everything a running server shares with its connections and calls. Held by
// shared_ptr so that a call finishing after Stop() (a late done->Run()) still finds it alive.

#include <asio/thread_pool.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "arenarpc/server.h"
#include "net/acceptor.h"
#include "net/connection.h"
#include "net/event_loop_group.h"
#include "server/rate_limited_log.h"
#include "server/service_registry.h"

namespace arenarpc::server {

struct ServerState : std::enable_shared_from_this<ServerState> {
  ServerOptions options;
  ServiceRegistry registry;
  std::map<std::string, std::shared_ptr<memory::MessageMemory>> strategies;  // by mode name

  std::unique_ptr<net::EventLoopGroup> loops;
  std::unique_ptr<asio::thread_pool> workers;  // only with options.worker_threads > 0
  std::shared_ptr<net::Acceptor> acceptor;

  std::atomic<bool> stopping{false};  // new requests get ELOGOFF

  // Calls admitted (counted against max_concurrency) whose reply has not been queued yet.
  std::atomic<int64_t> in_flight{0};
  std::mutex drain_mutex;
  std::condition_variable drained;  // notified when in_flight drops to 0 while stopping

  std::mutex connections_mutex;
  std::unordered_map<uint64_t, std::shared_ptr<net::Connection>> connections;
  bool closing_connections = false;  // guarded by connections_mutex
  std::condition_variable connections_gone;

  struct Counters {
    std::atomic<uint64_t> connections_accepted{0}, connections_closed_idle{0}, malformed_frames{0},
        requests{0}, rejected_stopping{0}, rejected_limit{0}, rejected_unknown{0},
        rejected_overcrowded{0};
  } counters;
  RateLimitedLog malformed_log;

  // Admission for max_concurrency (spec §5.1 step 3). false = over the limit (nothing counted).
  bool TryAdmit() {
    const int64_t now = in_flight.fetch_add(1, std::memory_order_acq_rel) + 1;
    if (options.max_concurrency > 0 && now > options.max_concurrency) {
      FinishOne();
      return false;
    }
    return true;
  }
  // A call admitted by TryAdmit() has queued its reply (or was dropped).
  void FinishOne() {
    if (in_flight.fetch_sub(1, std::memory_order_acq_rel) == 1 &&
        stopping.load(std::memory_order_acquire)) {
      std::lock_guard lock(drain_mutex);
      drained.notify_all();
    }
  }
};

}  // namespace arenarpc::server
