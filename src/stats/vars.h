#pragma once
// Vars: every counter and gauge of a server as named values, brpc's `name : value` lines. The
// names are a contract (load generators diff two /vars snapshots): docs/observability.md lists
// them. A method's vars are prefixed rpc_server_<m>_ with m its full name, '.' replaced by '_'.

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "arenarpc/method_stats.h"
#include "stats/process_stats.h"

namespace arenarpc::stats {
class ServerView;
struct StrategyTotals;
}

namespace arenarpc::stats {

struct Var {
  std::string name;
  std::string value;  // integers as integers, rates with up to 3 decimals
};

// Collects vars, keeping them sorted by name when done.
class VarList {
 public:
  void Add(std::string name, uint64_t value);
  void Add(std::string name, int64_t value);
  void Add(std::string name, double value);
  void AddMethod(const MethodStats& method);  // the method's own memory counters
  void AddStrategies(const std::vector<StrategyTotals>& strategies);  // each strategy's, once
  void AddServer(const ServerStats& server);
  void AddProcess(const ProcessStats& process);
  // Sorted by name.
  std::vector<Var> Take();

 private:
  std::vector<Var> vars_;
};

// "pkg.Service.Method" -> "pkg_Service_Method".
std::string MethodVarName(std::string_view full_name);

// Every var of a running server: its methods, its counters and this process.
std::vector<Var> CollectVars(const ServerView& view, std::chrono::steady_clock::time_point now);

// `name : value` lines of the vars whose name starts with `prefix`.
std::string FormatVars(const std::vector<Var>& vars, std::string_view prefix);

}  // namespace arenarpc::stats
