// wrr: round robin over a schedule in which each server appears `weight` times, interleaved
// (smooth weighted round robin, computed once per server list): over any run of sum(weights)
// consecutive calls each server gets exactly its weight. As with rr, the search past an unusable
// turn continues from a random place of the schedule.
#include "cluster/load_balancer.h"

namespace arenarpc::cluster {
namespace {

struct Schedule {
  std::vector<ServerPtr> servers;
  std::vector<uint32_t> order;  // indexes into servers, sum(weights) long
};

class WeightedRoundRobin final : public LoadBalancer {
 public:
  void Reset(std::vector<ServerPtr> servers) override {
    auto schedule = std::make_shared<Schedule>();
    std::vector<int64_t> current(servers.size(), 0);
    int64_t total = 0;
    for (const ServerPtr& s : servers) total += s->node().weight;
    for (int64_t step = 0; step < total; ++step) {
      size_t best = 0;
      for (size_t i = 0; i < servers.size(); ++i) {
        current[i] += servers[i]->node().weight;
        if (current[i] > current[best]) best = i;
      }
      current[best] -= total;
      schedule->order.push_back(static_cast<uint32_t>(best));
    }
    schedule->servers = std::move(servers);
    schedule_.store(std::move(schedule), std::memory_order_release);
  }
  ServerPtr Select(const SelectInput& input) override {
    const auto schedule = schedule_.load(std::memory_order_acquire);
    const size_t n = schedule->order.size();
    if (n == 0) return nullptr;
    const size_t start = next_.fetch_add(1, std::memory_order_relaxed) % n;
    size_t offset = 0;
    return FirstUsable(
        n + 1,
        [&](size_t k) -> const ServerPtr& {
          if (k == 1) offset = n > 1 ? 1 + ThreadRandom() % (n - 1) : 0;
          return schedule->servers[schedule->order[k == 0 ? start : (start + offset + k - 1) % n]];
        },
        input.excluded);
  }

 private:
  std::atomic<std::shared_ptr<const Schedule>> schedule_{std::make_shared<const Schedule>()};
  std::atomic<uint64_t> next_{0};
};

}  // namespace

std::unique_ptr<LoadBalancer> MakeWeightedRoundRobin() {
  return std::make_unique<WeightedRoundRobin>();
}

}  // namespace arenarpc::cluster
