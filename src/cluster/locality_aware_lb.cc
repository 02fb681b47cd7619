// la: a server is drawn with probability proportional to 1 / (latency x (in-flight + 1)), latency
// being its EWMA; a server without a sample yet counts as fast as the fastest one, so that new
// servers get tried.
#include <algorithm>
#include <limits>

#include "cluster/load_balancer.h"

namespace arenarpc::cluster {
namespace {

class LocalityAware final : public LoadBalancer {
 public:
  void Reset(std::vector<ServerPtr> servers) override { servers_.Store(std::move(servers)); }
  bool tracks_load() const noexcept override { return true; }
  ServerPtr Select(const SelectInput& input) override {
    const auto servers = servers_.Load();
    if (ServerPtr pick = Draw(*servers, input.excluded, /*skip_excluded=*/true)) return pick;
    return Draw(*servers, input.excluded, /*skip_excluded=*/false);
  }

 private:
  static ServerPtr Draw(const std::vector<ServerPtr>& servers,
                        std::span<const ServerLoad* const> excluded, bool skip_excluded) {
    int64_t fastest = std::numeric_limits<int64_t>::max();
    for (const ServerPtr& s : servers) {
      if (s->latency_us() > 0) fastest = std::min(fastest, s->latency_us());
    }
    if (fastest == std::numeric_limits<int64_t>::max()) fastest = 1;
    double total = 0;
    thread_local std::vector<double> weights;
    weights.assign(servers.size(), 0.0);
    for (size_t i = 0; i < servers.size(); ++i) {
      const ServerLoad& s = *servers[i];
      if (!s.healthy()) continue;
      if (skip_excluded && std::find(excluded.begin(), excluded.end(), &s) != excluded.end()) {
        continue;
      }
      const int64_t latency = s.latency_us() > 0 ? s.latency_us() : fastest;
      weights[i] = 1.0 / (static_cast<double>(latency) * (std::max(s.in_flight(), 0) + 1));
      total += weights[i];
    }
    if (total <= 0) return nullptr;
    double point = total * (static_cast<double>(ThreadRandom() >> 11) * 0x1.0p-53);
    for (size_t i = 0; i < servers.size(); ++i) {
      if (weights[i] <= 0) continue;
      point -= weights[i];
      if (point < 0) return servers[i];
    }
    for (size_t i = servers.size(); i-- > 0;) {
      if (weights[i] > 0) return servers[i];
    }
    return nullptr;
  }

  ServerListSnapshot servers_;
};

}  // namespace

std::unique_ptr<LoadBalancer> MakeLocalityAware() { return std::make_unique<LocalityAware>(); }

}  // namespace arenarpc::cluster
