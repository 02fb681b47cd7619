// rr: servers in address order, one after the other. When the turn's server is out of rotation
// (or already tried), the search continues from a random place, so that its calls spread over the
// others instead of all going to its successor.
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
    size_t offset = 0;
    return FirstUsable(
        n + 1,
        [&](size_t k) -> const ServerPtr& {
          if (k == 1) offset = n > 1 ? 1 + ThreadRandom() % (n - 1) : 0;
          return (*servers)[k == 0 ? start : (start + offset + k - 1) % n];
        },
        input.excluded);
  }

 private:
  ServerListSnapshot servers_;
  std::atomic<uint64_t> next_{0};
};

}  // namespace

std::unique_ptr<LoadBalancer> MakeRoundRobin() { return std::make_unique<RoundRobin>(); }

}  // namespace arenarpc::cluster
