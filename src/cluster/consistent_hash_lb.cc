// c_murmurhash: a hash ring with 100 points per server (MurmurHash3 of "ip:port-i"); a call goes
// to the first point at or after its request code, so a server joining or leaving moves only the
// keys of the arcs it owns.
#include <algorithm>

#include "arenarpc/cluster/hash.h"
#include "cluster/load_balancer.h"

namespace arenarpc::cluster {
namespace {

constexpr int kPointsPerServer = 100;

struct Ring {
  std::vector<ServerPtr> servers;
  std::vector<std::pair<uint32_t, uint32_t>> points;  // (hash, server index), sorted
};

class ConsistentHash final : public LoadBalancer {
 public:
  void Reset(std::vector<ServerPtr> servers) override {
    auto ring = std::make_shared<Ring>();
    ring->points.reserve(servers.size() * kPointsPerServer);
    for (size_t i = 0; i < servers.size(); ++i) {
      const std::string address = servers[i]->node().address();
      for (int p = 0; p < kPointsPerServer; ++p) {
        const std::string point = address + "-" + std::to_string(p);
        ring->points.emplace_back(MurmurHash32(point), static_cast<uint32_t>(i));
      }
    }
    std::sort(ring->points.begin(), ring->points.end());
    ring->servers = std::move(servers);
    ring_.store(std::move(ring), std::memory_order_release);
  }
  ServerPtr Select(const SelectInput& input) override {
    const auto ring = ring_.load(std::memory_order_acquire);
    const size_t n = ring->points.size();
    if (n == 0) return nullptr;
    const auto code = static_cast<uint32_t>(input.request_code);
    const size_t start = static_cast<size_t>(
        std::lower_bound(ring->points.begin(), ring->points.end(),
                         std::pair<uint32_t, uint32_t>(code, 0)) -
        ring->points.begin());
    return FirstUsable(
        n,
        [&](size_t k) -> const ServerPtr& {
          return ring->servers[ring->points[(start + k) % n].second];
        },
        input.excluded);
  }
  bool needs_request_code() const noexcept override { return true; }

 private:
  std::atomic<std::shared_ptr<const Ring>> ring_{std::make_shared<const Ring>()};
};

}  // namespace

std::unique_ptr<LoadBalancer> MakeConsistentHash() { return std::make_unique<ConsistentHash>(); }

}  // namespace arenarpc::cluster
