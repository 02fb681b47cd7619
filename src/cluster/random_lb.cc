// random: a uniformly random server.
#include "cluster/load_balancer.h"

namespace arenarpc::cluster {
namespace {

class Random final : public LoadBalancer {
 public:
  void Reset(std::vector<ServerPtr> servers) override { servers_.Store(std::move(servers)); }
  ServerPtr Select(const SelectInput& input) override {
    const auto servers = servers_.Load();
    const size_t n = servers->size();
    if (n == 0) return nullptr;
    const size_t start = ThreadRandom() % n;
    return FirstUsable(n, [&](size_t k) -> const ServerPtr& { return (*servers)[(start + k) % n]; },
                       input.excluded);
  }

 private:
  ServerListSnapshot servers_;
};

}  // namespace

std::unique_ptr<LoadBalancer> MakeRandom() { return std::make_unique<Random>(); }

}  // namespace arenarpc::cluster
