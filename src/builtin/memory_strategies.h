#pragma once
// The memory strategies of a server's methods, each once: a strategy object is shared by the
// methods configured with the same mode, so its totals belong to none of them alone. /memory and
// /status show each method's own counters, and these totals once, labelled with their methods.
#include <string>
#include <utility>
#include <vector>

#include "arenarpc/memory/message_memory.h"
#include "builtin/page_format.h"

namespace arenarpc::stats {
struct MethodView;
}

namespace arenarpc::builtin {

struct StrategyTotals {
  std::string mode;                  // its name ("paged", "auto", ...)
  std::vector<std::string> methods;  // the methods it serves
  memory::MemoryStats totals;
};

// In order of first appearance among `methods`.
std::vector<StrategyTotals> GroupByStrategy(const std::vector<stats::MethodView>& methods);

// (name, value) of a MemoryStats, in the order every page shows them.
std::vector<std::pair<const char*, uint64_t>> StatsFields(const memory::MemoryStats& s);

// [{"strategy", "methods": [...], counters...}, ...]
void WriteStrategiesJson(JsonWriter& json, const std::vector<StrategyTotals>& strategies);
// One "strategy MODE (methods: a, b): totals" block per strategy.
std::string StrategiesText(const std::vector<StrategyTotals>& strategies);
std::string StrategiesHtml(const std::vector<StrategyTotals>& strategies);

}  // namespace arenarpc::builtin
