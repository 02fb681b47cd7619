#pragma once
// The strategies' totals (stats/strategy_totals.h) as the pages print them.
#include <string>
#include <vector>

#include "builtin/page_format.h"
#include "stats/strategy_totals.h"

namespace arenarpc::builtin {

using stats::StatsFields;
using stats::StrategyTotals;

// [{"strategy", "methods": [...], counters...}, ...]
void WriteStrategiesJson(JsonWriter& json, const std::vector<StrategyTotals>& strategies);
// One "strategy MODE (methods: a, b): totals" block per strategy.
std::string StrategiesText(const std::vector<StrategyTotals>& strategies);
std::string StrategiesHtml(const std::vector<StrategyTotals>& strategies);

}  // namespace arenarpc::builtin
