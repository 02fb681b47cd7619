#pragma once
// One registered method: what to call, how its messages are made, and its counters.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "arenarpc/latency_histogram.h"
#include "arenarpc/memory/message_memory.h"
#include "memory/presence_advisor.h"
#include "memory/request_memory_gate.h"
#include "stats/error_counts.h"
#include "stats/memory_series.h"
#include "stats/window_histogram.h"
#include "util/spin_lock.h"

namespace google::protobuf {
class MethodDescriptor;
class Service;
}  // namespace google::protobuf

namespace arenarpc::server {

// Everything a call's MessagePair depends on, kept alive together by shared ownership so that a
// pair retained past Stop() (two-phase completion) can still be released safely. Members are
// destroyed bottom-up: the method binding before its strategy, the strategy before the service
// that owns the prototypes.
struct MethodBinding {
  std::string mode;  // the strategy's mode name ("auto", ..., or a strategy object's name())
  std::shared_ptr<google::protobuf::Service> service;
  std::shared_ptr<memory::MessageMemory> strategy;
  std::unique_ptr<memory::MethodMemory> memory;
};

struct MethodEntry {
  std::string full_name;  // "pkg.Service.Method"
  const google::protobuf::MethodDescriptor* descriptor = nullptr;
  google::protobuf::Service* service = nullptr;
  std::shared_ptr<google::protobuf::Service> service_owner;  // for MethodBinding::service
  // A built-in gRPC service's (health, reflection): heap messages, not in ListMethods() nor in
  // the pages' method tables (GetMethodStats(name) has its counters).
  bool builtin = false;
  // A streaming method of a GrpcStreamService (set by Server::Start: the gRPC session asks it of
  // every request's path, so it is found once, not by a dynamic_cast per request).
  bool grpc_stream = false;
  // How the method's messages are made now: set by Server::Start, replaced by a live change of
  // its memory mode (LiveSettings). A call takes it once, before it acquires its messages, and
  // keeps that binding until they went back to it: a switch never moves a call in flight.
  std::shared_ptr<MethodBinding> Binding() const {
    std::lock_guard lock(binding_mutex_);
    return binding_;
  }
  void SetBinding(std::shared_ptr<MethodBinding> binding) {
    std::shared_ptr<MethodBinding> previous;  // released after the lock (may be the last owner)
    std::lock_guard lock(binding_mutex_);
    previous = std::exchange(binding_, std::move(binding));
  }
  std::unique_ptr<memory::RequestMemoryGate> request_memory;  // set by Server::Start
  std::unique_ptr<memory::PresenceAdvisor> presence;          // set by Server::Start

  std::atomic<uint64_t> calls{0}, errors{0}, rejected{0};
  std::atomic<int64_t> in_flight{0};
  LatencyHistogram latency;        // socket -> reply queued
  LatencyHistogram queue_latency;  // socket -> taken by a thread
  std::atomic<int64_t> max_in_flight{0};
  std::atomic<uint64_t> arena_bytes{0}, arena_calls{0};
  stats::ErrorCounts errors_by_code;  // failed and rejected calls
  stats::WindowedLatency window;      // calls, errors and latency of the last 60 s
  stats::MemorySeries memory_series;  // held bytes and CPU per call, last 10 minutes (sampled)

  // Answered without running the handler.
  void CountRejected(int code) noexcept {
    rejected.fetch_add(1, std::memory_order_relaxed);
    errors_by_code.Count(code);
  }
  void CountStarted() noexcept {
    const int64_t running = in_flight.fetch_add(1, std::memory_order_relaxed) + 1;
    int64_t seen = max_in_flight.load(std::memory_order_relaxed);
    while (running > seen &&
           !max_in_flight.compare_exchange_weak(seen, running, std::memory_order_relaxed)) {
    }
  }
  // The handler's call ended at `now`; error_code 0 = success.
  void CountEnded(std::chrono::steady_clock::time_point now, int64_t latency_us,
                  int error_code) noexcept {
    latency.Record(latency_us);
    window.Record(now, latency_us, error_code != 0);
    calls.fetch_add(1, std::memory_order_relaxed);
    if (error_code != 0) {
      errors.fetch_add(1, std::memory_order_relaxed);
      errors_by_code.Count(error_code);
    }
    in_flight.fetch_sub(1, std::memory_order_relaxed);
  }

 private:
  // A lock held only to copy the pointer (libstdc++'s atomic<shared_ptr> unlocks its loads with
  // relaxed order: a race to ThreadSanitizer); a spin lock, since a std::mutex's two calls into
  // libpthread were a visible part of a small call's instructions.
  mutable util::SpinLock binding_mutex_;
  std::shared_ptr<MethodBinding> binding_;
};

}  // namespace arenarpc::server
