#include "stats/vars.h"

#include <algorithm>
#include <cstdio>

#include "stats/server_view.h"
#include "stats/strategy_totals.h"

namespace arenarpc::stats {

void VarList::Add(std::string name, uint64_t value) {
  vars_.push_back({std::move(name), std::to_string(value)});
}

void VarList::Add(std::string name, int64_t value) {
  vars_.push_back({std::move(name), std::to_string(value)});
}

void VarList::Add(std::string name, double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.3f", value);
  vars_.push_back({std::move(name), text});
}

std::string MethodVarName(std::string_view full_name) {
  std::string name(full_name);
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

void VarList::AddMethod(const MethodStats& m) {
  const std::string p = "rpc_server_" + MethodVarName(m.full_name) + "_";
  Add(p + "count", m.calls);
  Add(p + "error_count", m.errors);
  Add(p + "rejected_count", m.rejected);
  for (const ErrorCodeCount& e : m.errors_by_code) {
    Add(p + "errno_" + (e.code == 0 ? std::string("other") : std::to_string(e.code)) + "_count",
        e.count);
  }
  Add(p + "latency_sum_us", m.latency_sum_us);
  Add(p + "in_flight", m.in_flight);
  Add(p + "max_in_flight", m.max_in_flight);
  // Latency over the last 10 s (the unsuffixed names), 60 s and since start.
  auto percentiles = [&](const std::string& latency, int64_t p50, int64_t p90, int64_t p99,
                         int64_t p999, int64_t max) {
    Add(latency + "p50_us", p50);
    Add(latency + "p90_us", p90);
    Add(latency + "p99_us", p99);
    Add(latency + "p999_us", p999);
    Add(latency + "max_us", max);
  };
  const WindowStats& w10 = m.last_10s;
  const WindowStats& w60 = m.last_60s;
  Add(p + "qps", w10.qps);
  percentiles(p + "latency_", w10.latency_p50_us, w10.latency_p90_us, w10.latency_p99_us,
              w10.latency_p999_us, w10.latency_max_us);
  Add(p + "latency_mean_us", w10.latency_mean_us);
  Add(p + "qps_60s", w60.qps);
  percentiles(p + "latency_60s_", w60.latency_p50_us, w60.latency_p90_us, w60.latency_p99_us,
              w60.latency_p999_us, w60.latency_max_us);
  percentiles(p + "latency_total_", m.latency_p50_us, m.latency_p90_us, m.latency_p99_us,
              m.latency_p999_us, m.latency_max_us);
  Add(p + "queue_p99_us", m.queue_p99_us);
  // The method's own share: its pairs, and for reuse its types' pools (the strategy's page pool
  // is in AddStrategies: it belongs to no method alone).
  const std::string mem = p + "memory_";
  for (const auto& [field, value] : StatsFields(m.method_memory)) Add(mem + field, value);
  Add(mem + "arena_bytes", m.arena_bytes);
  Add(mem + "arena_calls", m.arena_calls);
}

void VarList::AddStrategies(const std::vector<StrategyTotals>& strategies) {
  std::vector<std::string> names;
  for (const StrategyTotals& s : strategies) {
    // Two strategy objects may share a name (a user's own): the later ones get _2, _3, ...
    std::string name = MethodVarName(s.mode);
    const auto same = std::count(names.begin(), names.end(), name);
    names.push_back(name);
    if (same > 0) name += "_" + std::to_string(same + 1);
    const std::string p = "rpc_server_strategy_" + name + "_";
    Add(p + "methods", static_cast<uint64_t>(s.methods.size()));
    for (const auto& [field, value] : StatsFields(s.totals)) Add(p + "memory_" + field, value);
  }
}

void VarList::AddServer(const ServerStats& s) {
  Add("rpc_server_connection_count", s.connections_open);
  Add("rpc_server_connections_accepted", s.connections_accepted);
  Add("rpc_server_connections_closed_idle", s.connections_closed_idle);
  Add("rpc_server_connections_closed_read_timeout", s.connections_closed_read_timeout);
  Add("rpc_server_connections_closed_first_byte_timeout", s.connections_closed_first_byte_timeout);
  Add("rpc_server_connections_closed_write_timeout", s.connections_closed_write_timeout);
  Add("rpc_server_connections_rejected", s.connections_rejected);
  Add("rpc_server_malformed_frames", s.malformed_frames);
  Add("rpc_server_requests", s.requests);
  Add("rpc_server_rejected_stopping", s.rejected_stopping);
  Add("rpc_server_rejected_limit", s.rejected_limit);
  Add("rpc_server_rejected_unknown", s.rejected_unknown);
  Add("rpc_server_rejected_overcrowded", s.rejected_overcrowded);
  Add("rpc_server_rejected_timed_out", s.rejected_timed_out);
  Add("rpc_server_rejected_queue_wait", s.rejected_queue_wait);
  Add("rpc_server_canceled_before_start", s.canceled_before_start);
  Add("rpc_server_read_pauses", s.read_pauses);
  Add("rpc_server_refused_bytes_unread", s.refused_bytes_unread);
  Add("rpc_server_rejected_request_memory", s.rejected_request_memory);
  Add("rpc_server_rejected_message_memory", s.rejected_message_memory);
  Add("rpc_server_message_memory_in_flight", s.message_memory_in_flight);
  Add("rpc_server_message_memory_peak", s.message_memory_peak);
  Add("rpc_server_message_memory_trims", s.message_memory_trims);
  Add("rpc_server_rejected_fiber_limit", s.rejected_fiber_limit);
  Add("rpc_server_fibers", s.fibers);
  Add("rpc_server_unwritten_held_bytes", s.unwritten_held_bytes);
  Add("rpc_server_in_flight", s.in_flight);
  Add("rpc_server_queued", s.queued);
  Add("rpc_server_concurrency_limit", static_cast<int64_t>(s.concurrency_limit));
  Add("rpc_server_capture_sampled", s.capture_sampled);
  Add("rpc_server_capture_written", s.capture_written);
  Add("rpc_server_capture_dropped", s.capture_dropped);
  Add("rpc_server_capture_write_errors", s.capture_write_errors);
  Add("rpc_server_capture_files_opened", s.capture_files_opened);
  Add("rpc_server_capture_queued_bytes", s.capture_queued_bytes);
}

void VarList::AddProcess(const ProcessStats& p) {
  Add("process_cpu_usage_us", p.cpu_us());
  Add("process_cpu_user_us", p.cpu_user_us);
  Add("process_cpu_system_us", p.cpu_system_us);
  Add("process_rss_bytes", p.rss_bytes);
  Add("process_fd_count", p.fd_count);
  Add("process_thread_count", p.thread_count);
}

std::vector<Var> VarList::Take() {
  std::sort(vars_.begin(), vars_.end(),
            [](const Var& a, const Var& b) { return a.name < b.name; });
  return std::move(vars_);
}

std::vector<Var> CollectVars(const ServerView& view, std::chrono::steady_clock::time_point now) {
  VarList list;
  const std::vector<MethodView> methods = view.Methods(now);
  for (const MethodView& method : methods) list.AddMethod(method.stats);
  list.AddStrategies(GroupByStrategy(methods));
  list.AddServer(view.Server());
  list.AddProcess(ReadProcessStats());
  return list.Take();
}

std::string FormatVars(const std::vector<Var>& vars, std::string_view prefix) {
  std::string out;
  for (const Var& var : vars) {
    if (!var.name.starts_with(prefix)) continue;
    out.append(var.name).append(" : ").append(var.value).append("\n");
  }
  return out;
}

}  // namespace arenarpc::stats
