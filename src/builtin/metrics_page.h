#pragma once
// /metrics: the server's metrics in the Prometheus text exposition format 0.0.4, built with
// prometheus-cpp's core library (families, text serializer) from the same counters as /vars.
// Names and labels: docs/observability.md.

#include <memory>
#include <string>

#include "builtin/builtin_registry.h"

namespace arenarpc::stats {
class ServerView;
}

namespace arenarpc::builtin {

void AddMetricsPage(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view);

// The exposition text (what /metrics serves).
std::string RenderMetrics(const stats::ServerView& view);

}  // namespace arenarpc::builtin
