#pragma once
// LoadBalancer: picks the server of one attempt. Reset() (naming thread) swaps in an immutable
// snapshot built from the new server list; Select() (call path) reads the current snapshot
// without a lock. Names: "rr", "random", "wrr", "c_murmurhash", "la" (brpc's).

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/server_load.h"

namespace arenarpc::cluster {

using ServerPtr = std::shared_ptr<ServerLoad>;

struct SelectInput {
  uint64_t request_code = 0;  // c_murmurhash: the point on the ring (low 32 bits)
  // Servers this call already tried: avoided while another healthy server exists.
  std::span<const ServerLoad* const> excluded;
};

class LoadBalancer {
 public:
  virtual ~LoadBalancer() = default;
  // The whole new list (sorted by address, as Normalize() leaves it).
  virtual void Reset(std::vector<ServerPtr> servers) = 0;
  // A healthy server not in `excluded`; else a healthy excluded one; nullptr if none is healthy.
  virtual ServerPtr Select(const SelectInput& input) = 0;
  // c_murmurhash: calls without Controller::set_request_code() fail (EINVAL).
  virtual bool needs_request_code() const noexcept { return false; }
  // la: reads ServerLoad's in-flight count and latency, which calls then maintain.
  virtual bool tracks_load() const noexcept { return false; }
};

// nullptr with *error listing the known names if `name` is unknown.
std::unique_ptr<LoadBalancer> MakeLoadBalancer(std::string_view name, std::string* error);

// Shared walk of rr/random/wrr/c_murmurhash: candidates at(0), at(1), ... at(count-1) in order of
// preference; the first healthy one not excluded, else the first healthy one.
template <class At>
ServerPtr FirstUsable(size_t count, const At& at, std::span<const ServerLoad* const> excluded) {
  const ServerPtr* fallback = nullptr;
  for (size_t k = 0; k < count; ++k) {
    const ServerPtr& server = at(k);
    if (!server->healthy()) continue;
    bool tried = false;
    for (const ServerLoad* e : excluded) tried |= e == server.get();
    if (!tried) return server;
    if (fallback == nullptr) fallback = &server;
  }
  return fallback != nullptr ? *fallback : nullptr;
}

// The read-mostly snapshot of balancers that need only the list itself (rr, random, la).
class ServerListSnapshot {
 public:
  using List = std::vector<ServerPtr>;
  void Store(List servers) {
    list_.store(std::make_shared<const List>(std::move(servers)), std::memory_order_release);
  }
  std::shared_ptr<const List> Load() const { return list_.load(std::memory_order_acquire); }

 private:
  std::atomic<std::shared_ptr<const List>> list_{std::make_shared<const List>()};
};

// The per-thread generator random and la draw from.
uint64_t ThreadRandom() noexcept;

std::unique_ptr<LoadBalancer> MakeRoundRobin();
std::unique_ptr<LoadBalancer> MakeRandom();
std::unique_ptr<LoadBalancer> MakeWeightedRoundRobin();
std::unique_ptr<LoadBalancer> MakeConsistentHash();
std::unique_ptr<LoadBalancer> MakeLocalityAware();

}  // namespace arenarpc::cluster
