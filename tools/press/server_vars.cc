#include "press/server_vars.h"

#include <charconv>

namespace arenarpc::press {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::optional<double> Find(const VarsMap& vars, const std::string& name) {
  auto it = vars.find(name);
  if (it == vars.end()) return std::nullopt;
  return it->second;
}

}  // namespace

VarsMap ParseVars(std::string_view text) {
  VarsMap vars;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    const size_t colon = line.find(" : ");
    if (colon == std::string_view::npos) continue;
    const std::string_view name = Trim(line.substr(0, colon));
    const std::string_view value = Trim(line.substr(colon + 3));
    double number = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (name.empty() || ec != std::errc() || end != value.data() + value.size()) continue;
    vars.insert_or_assign(std::string(name), number);
  }
  return vars;
}

std::string VarsMethodName(std::string_view method_full_name) {
  std::string name(method_full_name);
  for (char& c : name) {
    if (c == '.') c = '_';
  }
  return name;
}

bool IsMemoryGauge(std::string_view field) {
  return field == "retained_bytes_estimate" || field == "objects_pooled" ||
         field == "pages_cached";
}

ServerView ComputeServerView(const VarsMap& before, const VarsMap& after,
                             std::string_view method_full_name) {
  ServerView view;
  view.method_prefix = "rpc_server_" + VarsMethodName(method_full_name) + "_";
  const auto count_before = Find(before, view.method_prefix + "count");
  const auto count_after = Find(after, view.method_prefix + "count");
  if (!count_before || !count_after) {
    view.note = "/vars has no " + view.method_prefix + "count";
    return view;
  }
  view.valid = true;
  view.calls = *count_after - *count_before;
  auto delta = [&](const std::string& name) -> std::optional<double> {
    const auto b = Find(before, name), a = Find(after, name);
    if (!b || !a) return std::nullopt;
    return *a - *b;
  };
  view.errors = delta(view.method_prefix + "error_count").value_or(0);
  if (const auto sum = delta(view.method_prefix + "latency_sum_us"); sum && view.calls > 0) {
    view.mean_latency_us = *sum / view.calls;
  }
  view.latency_p99_us = Find(after, view.method_prefix + "latency_p99_us");
  view.cpu_us = delta("process_cpu_usage_us");
  if (view.cpu_us && view.calls > 0) view.cpu_us_per_call = *view.cpu_us / view.calls;
  view.rss_bytes = Find(after, "process_rss_bytes");
  const std::string memory = view.method_prefix + "memory_";
  for (auto it = after.lower_bound(memory); it != after.end() && it->first.starts_with(memory);
       ++it) {
    const std::string field = it->first.substr(memory.size());
    if (IsMemoryGauge(field)) {
      view.memory_gauges.emplace_back(field, it->second);
    } else if (const auto d = delta(it->first)) {
      view.memory_deltas.emplace_back(field, *d);
    }
  }
  return view;
}

}  // namespace arenarpc::press
