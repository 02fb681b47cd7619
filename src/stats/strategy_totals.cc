#include "stats/strategy_totals.h"

#include "arenarpc/method_stats.h"
#include "stats/server_view.h"

namespace arenarpc::stats {

std::vector<StrategyTotals> GroupByStrategy(const std::vector<MethodView>& methods) {
  std::vector<StrategyTotals> out;
  std::vector<uintptr_t> ids;
  for (const MethodView& view : methods) {
    const MethodStats& m = view.stats;
    if (m.memory_strategy_id == 0) continue;
    size_t i = 0;
    while (i < ids.size() && ids[i] != m.memory_strategy_id) ++i;
    if (i == ids.size()) {
      ids.push_back(m.memory_strategy_id);
      out.push_back({m.memory_mode, {}, m.memory});
    }
    out[i].methods.push_back(m.full_name);
  }
  return out;
}

std::vector<std::pair<const char*, uint64_t>> StatsFields(const memory::MemoryStats& s) {
  return {{"acquired", s.acquired},
          {"released", s.released},
          {"page_allocations", s.page_allocations},
          {"page_cache_hits", s.page_cache_hits},
          {"page_cache_misses", s.page_cache_misses},
          {"pages_cached", s.pages_cached},
          {"pages_outstanding", s.pages_outstanding},
          {"reuses", s.reuses},
          {"rebuilds", s.rebuilds},
          {"trims", s.trims},
          {"objects_pooled", s.objects_pooled},
          {"retained_bytes_estimate", s.retained_bytes_estimate},
          {"requests_shaped", s.requests_shaped},
          {"responses_mirrored", s.responses_mirrored},
          {"calls_on_arena", s.calls_on_arena}};
}

}  // namespace arenarpc::stats
