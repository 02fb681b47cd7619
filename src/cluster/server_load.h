#pragma once
// ServerLoad: what load balancers read about one server of a cluster, updated by the calls:
// whether it is in rotation (healthy) and, for la, its calls in flight and latency (EWMA).
// All fields are atomics read on the call path without locks.

#include <atomic>
#include <cstdint>

#include "cluster/server_node.h"

namespace arenarpc::cluster {

class ServerLoad {
 public:
  explicit ServerLoad(ServerNode node) : node_(std::move(node)) {}
  virtual ~ServerLoad() = default;

  const ServerNode& node() const noexcept { return node_; }
  bool healthy() const noexcept { return healthy_.load(std::memory_order_relaxed); }
  int32_t in_flight() const noexcept { return in_flight_.load(std::memory_order_relaxed); }
  // Latency EWMA in microseconds; 0 = no sample yet.
  int64_t latency_us() const noexcept { return latency_us_.load(std::memory_order_relaxed); }

  void AttemptStarted() noexcept { in_flight_.fetch_add(1, std::memory_order_relaxed); }
  // Each attempt that started ends once; its latency feeds the EWMA (weight 1/8 per sample).
  void AttemptEnded(int64_t latency_us) noexcept {
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    const int64_t sample = latency_us > 0 ? latency_us : 1;
    const int64_t old = latency_us_.load(std::memory_order_relaxed);
    latency_us_.store(old == 0 ? sample : old + (sample - old) / 8, std::memory_order_relaxed);
  }

 protected:
  std::atomic<bool> healthy_{true};

 private:
  const ServerNode node_;
  std::atomic<int32_t> in_flight_{0};
  std::atomic<int64_t> latency_us_{0};
};

}  // namespace arenarpc::cluster
