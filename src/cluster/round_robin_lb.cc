// rr: servers in address order, one after the other.
#include "cluster/load_balancer.h"

namespace arenarpc::cluster {
namespace {

class RoundRobin final : public LoadBalancer {
 public:
  void Reset(std::vector<ServerPtr> servers) override { servers_.Store(std::move(servers)); }
  ServerPtr Select(const SelectInput& input) override {
    const auto servers = servers_.Load();
    const size_t n = servers->size();
    if (n == 0) return nullptr;
    const size_t start = next_.fetch_add(1, std::memory_order_relaxed) % n;
    return FirstUsable(n, [&](size_t k) -> const ServerPtr& { return (*servers)[(start + k) % n]; },
                       input.excluded);
  }

 private:
  ServerListSnapshot servers_;
  std::atomic<uint64_t> next_{0};
};

}  // namespace

std::unique_ptr<LoadBalancer> MakeRoundRobin() { return std::make_unique<RoundRobin>(); }

}  // namespace arenarpc::cluster
