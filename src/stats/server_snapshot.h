#pragma once
// Snapshots of a running server's counters: what Server::GetMethodStats/GetServerStats return and
// what the built-in pages show.

#include <chrono>
#include <string>
#include <vector>

#include "arenarpc/method_stats.h"

namespace arenarpc::server {
struct MethodEntry;
struct ServerState;
}  // namespace arenarpc::server

namespace arenarpc::stats {

MethodStats SnapshotMethod(const server::MethodEntry& method,
                           std::chrono::steady_clock::time_point now);
// Every registered method, sorted by full name.
std::vector<MethodStats> SnapshotMethods(const server::ServerState& state,
                                         std::chrono::steady_clock::time_point now);
ServerStats SnapshotServer(server::ServerState& state);

}  // namespace arenarpc::stats
