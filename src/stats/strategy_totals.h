#pragma once
// The memory strategies of a server's methods, each once: a strategy object is shared by the
// methods configured with the same mode, so its totals belong to none of them alone. Every page
// (/memory, /status, /vars, /metrics) shows each method's own counters, and these totals once,
// labelled with their methods.
#include <string>
#include <utility>
#include <vector>

#include "arenarpc/memory/message_memory.h"

namespace arenarpc::stats {

struct MethodView;

struct StrategyTotals {
  std::string mode;                  // its name ("paged", "auto", ...)
  std::vector<std::string> methods;  // the methods it serves
  memory::MemoryStats totals;
};

// In order of first appearance among `methods`.
std::vector<StrategyTotals> GroupByStrategy(const std::vector<MethodView>& methods);

// (name, value) of a MemoryStats, in the order every page shows them.
std::vector<std::pair<const char*, uint64_t>> StatsFields(const memory::MemoryStats& s);

}  // namespace arenarpc::stats
