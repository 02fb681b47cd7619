// src/stats alone: counters, the memory series on a clock of the test's own, and /vars collected
// from a fake ServerView (the one face a server shows its observers), no server running.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "stats/error_counts.h"
#include "stats/memory_series.h"
#include "stats/server_view.h"
#include "stats/strategy_totals.h"
#include "stats/vars.h"

namespace arenarpc::stats {
namespace {

using namespace std::chrono_literals;

TEST(ErrorCounts, BrpcCodesCountAloneAndEveryOtherCodeShares) {
  ErrorCounts counts;
  counts.Count(2001);
  counts.Count(1008);
  counts.Count(1008);
  counts.Count(42);    // a handler's own code
  counts.Count(-7);    // and anything else
  const std::vector<std::pair<int, uint64_t>> expected = {
      {1008, 2}, {2001, 1}, {ErrorCounts::kOtherCode, 2}};
  EXPECT_EQ(expected, counts.NonZero());
  EXPECT_TRUE(ErrorCounts().NonZero().empty());
}

TEST(ErrorCounts, ConcurrentCountsAreExact) {
  ErrorCounts counts;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&counts] {
      for (int i = 0; i < 10000; ++i) counts.Count(i % 2 == 0 ? 1003 : 5);
    });
  }
  for (auto& t : threads) t.join();
  const std::vector<std::pair<int, uint64_t>> expected = {{1003, 20000},
                                                          {ErrorCounts::kOtherCode, 20000}};
  EXPECT_EQ(expected, counts.NonZero());
}

TEST(MemorySeries, PointsAverageTheirTenSecondsAndAgeOut) {
  const auto t0 = MemorySeries::Clock::time_point{} + 1h;
  MemorySeries series(t0);
  series.RecordHeld(1000, t0 + 1s);
  series.RecordHeld(3000, t0 + 9s);
  series.RecordCpu(500, t0 + 12s);
  auto points = series.Points(t0 + 15s);
  const MemoryPoint& first = points[MemorySeries::kPoints - 2];
  const MemoryPoint& second = points[MemorySeries::kPoints - 1];
  EXPECT_EQ(2u, first.held_samples);
  EXPECT_DOUBLE_EQ(2000, first.held_bytes_per_call());
  EXPECT_EQ(0u, first.cpu_samples);
  EXPECT_EQ(1u, second.cpu_samples);
  EXPECT_DOUBLE_EQ(500, second.cpu_ns_per_call());
  // Ten minutes on, both have left the window; a slot reused for a new period starts empty.
  const auto later =
      t0 + 12s + std::chrono::seconds(MemorySeries::kPoints * MemorySeries::kPointSeconds);
  series.RecordHeld(7, later);
  points = series.Points(later);
  uint64_t samples = 0;
  for (const MemoryPoint& p : points) samples += p.held_samples + p.cpu_samples;
  EXPECT_EQ(1u, samples);
  EXPECT_EQ(1u, points.back().held_samples);
}

// Two methods served by one strategy object and a third by another; nothing else of a server.
class FakeServerView : public ServerView {
 public:
  bool available() const override { return true; }
  ServerStats Server() const override {
    ServerStats s;
    s.requests = 12;
    s.connections_open = 3;
    return s;
  }
  std::vector<MethodView> Methods(Clock::time_point /*now*/) const override {
    std::vector<MethodView> out(3);
    auto method = [](MethodView& v, const char* name, const char* mode, uintptr_t id,
                     uint64_t own_acquired, uint64_t strategy_acquired) {
      v.stats.full_name = name;
      v.stats.memory_mode = mode;
      v.stats.memory_strategy_id = id;
      v.stats.calls = own_acquired;
      v.stats.method_memory.acquired = own_acquired;
      v.stats.memory.acquired = strategy_acquired;
      v.stats.memory.page_allocations = id == 1 ? 40 : 0;  // the pool: the strategy's only
      v.stats.last_10s.qps = 1.23456;
    };
    method(out[0], "pkg.Search.Find", "paged", 1, 7, 10);
    method(out[1], "pkg.Search.Idle", "paged", 1, 0, 10);
    method(out[2], "pkg.Stats.Get", "reuse", 2, 3, 3);
    out[0].stats.errors_by_code = {{2001, 4}, {0, 1}};
    return out;
  }
  std::vector<ConnectionInfo> Connections() const override { return {}; }
  ServerOptions Options() const override { return {}; }
};

std::string Value(const std::vector<Var>& vars, const std::string& name) {
  for (const Var& v : vars) {
    if (v.name == name) return v.value;
  }
  return "(missing " + name + ")";
}

TEST(Vars, AMethodShowsItsOwnMemoryAndEachStrategyAppearsOnce) {
  const std::vector<Var> vars = CollectVars(FakeServerView(), MemorySeries::Clock::now());
  EXPECT_TRUE(std::is_sorted(vars.begin(), vars.end(),
                             [](const Var& a, const Var& b) { return a.name < b.name; }));
  EXPECT_EQ(vars.end(), std::adjacent_find(vars.begin(), vars.end(), [](const Var& a,
                                                                         const Var& b) {
              return a.name == b.name;
            })) << "a name appears twice";
  EXPECT_EQ("7", Value(vars, "rpc_server_pkg_Search_Find_memory_acquired"));
  EXPECT_EQ("0", Value(vars, "rpc_server_pkg_Search_Idle_memory_acquired"));
  EXPECT_EQ("0", Value(vars, "rpc_server_pkg_Search_Find_memory_page_allocations"));
  EXPECT_EQ("10", Value(vars, "rpc_server_strategy_paged_memory_acquired"));
  EXPECT_EQ("40", Value(vars, "rpc_server_strategy_paged_memory_page_allocations"));
  EXPECT_EQ("2", Value(vars, "rpc_server_strategy_paged_methods"));
  EXPECT_EQ("3", Value(vars, "rpc_server_strategy_reuse_memory_acquired"));
  EXPECT_EQ("4", Value(vars, "rpc_server_pkg_Search_Find_errno_2001_count"));
  EXPECT_EQ("1", Value(vars, "rpc_server_pkg_Search_Find_errno_other_count"));
  EXPECT_EQ("1.235", Value(vars, "rpc_server_pkg_Search_Find_qps"));  // rates: 3 decimals
  EXPECT_EQ("12", Value(vars, "rpc_server_requests"));
  EXPECT_NE("0", Value(vars, "process_rss_bytes"));
  // FormatVars: brpc's `name : value` lines of one prefix only.
  const std::string text = FormatVars(vars, "rpc_server_strategy_paged_");
  EXPECT_NE(std::string::npos, text.find("rpc_server_strategy_paged_methods : 2\n"));
  EXPECT_EQ(std::string::npos, text.find("rpc_server_strategy_reuse_"));
}

TEST(StrategyTotals, StrategiesGroupByIdentityNotByName) {
  std::vector<MethodView> methods = FakeServerView().Methods({});
  methods[2].stats.memory_mode = "paged";  // another object that happens to share the name
  const std::vector<StrategyTotals> strategies = GroupByStrategy(methods);
  ASSERT_EQ(2u, strategies.size());
  EXPECT_EQ((std::vector<std::string>{"pkg.Search.Find", "pkg.Search.Idle"}),
            strategies[0].methods);
  EXPECT_EQ(10u, strategies[0].totals.acquired);
  EXPECT_EQ(3u, strategies[1].totals.acquired);
  VarList list;
  list.AddStrategies(strategies);
  const std::vector<Var> vars = list.Take();
  EXPECT_EQ("10", Value(vars, "rpc_server_strategy_paged_memory_acquired"));
  EXPECT_EQ("3", Value(vars, "rpc_server_strategy_paged_2_memory_acquired"));
}

}  // namespace
}  // namespace arenarpc::stats
