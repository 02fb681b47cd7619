#pragma once
// ServerState: everything a running server shares with its connections and calls. Held by
// shared_ptr so that a call finishing after Stop() (a late done->Run()) still finds it alive.

#include <asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "arenarpc/server.h"
#include "builtin/builtin_registry.h"
#include "memory/message_memory_budget.h"
#include "fiber/scheduler.h"
#include "net/acceptor.h"
#include "net/connection.h"
#include "net/event_loop_group.h"
#include "server/auto_concurrency_limiter.h"
#include "server/connection_table.h"
#include "server/service_registry.h"
#include "util/rate_limited_log.h"

namespace arenarpc::server {

struct ServerState : std::enable_shared_from_this<ServerState> {
  ServerOptions options;
  ServiceRegistry registry;
  std::map<std::string, std::shared_ptr<memory::MessageMemory>> strategies;  // by mode name

  std::unique_ptr<net::EventLoopGroup> loops;  // one io_context shared by all I/O threads
  std::unique_ptr<asio::thread_pool> workers;  // only with options.worker_threads > 0
  // Runs every handler on a fiber, on the handler threads (workers, else the I/O threads).
  std::unique_ptr<fiber::Scheduler> fibers;
  std::shared_ptr<net::Acceptor> acceptor;
  std::shared_ptr<net::Acceptor> internal_acceptor;  // options.internal_port >= 0
  builtin::BuiltinRegistry builtins;  // filled before Start() listens, read-only after
  std::optional<AutoConcurrencyLimiter> limiter;  // max_concurrency = "auto"
  memory::MessageMemoryBudget message_memory;     // max_inflight_message_memory

  std::atomic<bool> stopping{false};  // new requests get ELOGOFF

  // Calls admitted (counted against max_concurrency) whose reply has not been queued yet.
  std::atomic<int64_t> in_flight{0};
  // ... of which dispatched to a thread and not started yet (bounded by max_queued_requests).
  std::atomic<int64_t> queued{0};
  std::mutex drain_mutex;
  std::condition_variable drained;  // notified when in_flight drops to 0 while stopping

  ConnectionTable connections;

  struct Counters {
    std::atomic<uint64_t> connections_accepted{0}, connections_closed_idle{0},
        connections_closed_read_timeout{0}, connections_closed_first_byte_timeout{0},
        connections_closed_write_timeout{0}, connections_rejected{0}, malformed_frames{0},
        requests{0}, rejected_stopping{0}, rejected_limit{0}, rejected_unknown{0},
        rejected_overcrowded{0}, rejected_timed_out{0}, read_pauses{0}, rejected_fiber_limit{0};
  } counters;
  util::RateLimitedLog malformed_log;
  util::RateLimitedLog timeout_log;

  // The limit in force now; 0 = unlimited.
  int concurrency_limit() const {
    if (limiter) return limiter->limit();
    return options.max_concurrency.fixed_limit();
  }

  // Admission for max_concurrency. false = over the limit (nothing counted).
  bool TryAdmit() {
    const int64_t now = in_flight.fetch_add(1, std::memory_order_acq_rel) + 1;
    const int limit = concurrency_limit();
    if (limit > 0 && now > limit) {
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
