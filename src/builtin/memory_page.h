#pragma once
// /memory: per method, the message memory: strategy, what "auto" chose and why, the presence
// advisor, held bytes and CPU per call over the last 10 minutes, arena bytes per call, pairs
// acquired and released, what reuse did and the pools of its message types: the method's own
// counters. Then each strategy's totals once (page pool, all its pools), with the methods it
// serves. Text, ?format=json, or HTML with charts (?format=html or a browser).

#include <memory>

#include "builtin/builtin_registry.h"
#include "builtin/page_format.h"

namespace arenarpc {
struct MethodStats;
}
namespace arenarpc::stats {
class ServerView;
struct MethodView;
}

namespace arenarpc::builtin {

void AddMemoryPage(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view);

// One method's memory as a JSON object (also used by /status); with `view`, its last 10 minutes.
void WriteMethodMemoryJson(JsonWriter& json, const MethodStats& method,
                           const stats::MethodView* view = nullptr);

}  // namespace arenarpc::builtin
