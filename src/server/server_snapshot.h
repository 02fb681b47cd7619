#pragma once
// Snapshots of a running server's counters: what Server::GetMethodStats/GetServerStats return and
// what the built-in pages see through the ServerView.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "arenarpc/method_stats.h"

namespace arenarpc::stats {
class ServerView;
}

namespace arenarpc::server {

struct MethodEntry;
struct ServerState;

MethodStats SnapshotMethod(const server::MethodEntry& method,
                           std::chrono::steady_clock::time_point now);
// Every registered method, sorted by full name.
std::vector<MethodStats> SnapshotMethods(const server::ServerState& state,
                                         std::chrono::steady_clock::time_point now);
ServerStats SnapshotServer(server::ServerState& state);

// The ServerView observers read `state` through; it holds the state weakly (the pages that hold
// the view live inside it).
std::shared_ptr<const stats::ServerView> MakeServerView(std::weak_ptr<ServerState> state);

}  // namespace arenarpc::server
