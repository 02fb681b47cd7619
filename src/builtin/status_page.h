#pragma once
// /status: the server at a glance. HTML for people (a table per method: QPS, errors by code,
// concurrency, latency over the last 10 s, 60 s and since start, memory strategy and counters,
// a sparkline of the last 60 s; the server's counters; no external assets), and
// /status?format=json for tools.

#include <memory>

#include "builtin/builtin_registry.h"

namespace arenarpc::stats {
class ServerView;
}

namespace arenarpc::builtin {

void AddStatusPage(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view);

}  // namespace arenarpc::builtin
