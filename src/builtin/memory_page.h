#pragma once
// /memory: per method, the message memory: strategy, arena bytes per call, pairs acquired and
// released, page pool hits/misses and pages cached/outstanding (paged), reuse pool objects and
// retained bytes (reuse). Text, or ?format=json. The strategy counters are the strategy's
// totals, shared by every method it serves.

#include <memory>

#include "builtin/builtin_registry.h"
#include "builtin/page_format.h"

namespace arenarpc {
struct MethodStats;
}
namespace arenarpc::stats {
class ServerView;
}

namespace arenarpc::builtin {

void AddMemoryPage(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view);

// One method's memory as a JSON object (also used by /status).
void WriteMethodMemoryJson(JsonWriter& json, const MethodStats& method);

}  // namespace arenarpc::builtin
