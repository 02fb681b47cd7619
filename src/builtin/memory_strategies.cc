#include "builtin/memory_strategies.h"

#include "arenarpc/method_stats.h"
#include "stats/server_view.h"

namespace arenarpc::builtin {

std::vector<StrategyTotals> GroupByStrategy(const std::vector<stats::MethodView>& methods) {
  std::vector<StrategyTotals> out;
  std::vector<uintptr_t> ids;
  for (const stats::MethodView& view : methods) {
    const MethodStats& m = view.stats;
    if (m.memory_strategy_id == 0) continue;
    size_t i = 0;
    while (i < ids.size() && ids[i] != m.memory_strategy_id) ++i;
    if (i == ids.size()) {
      ids.push_back(m.memory_strategy_id);
      out.push_back({m.memory_mode, {}, m.memory});
    }
    out[i].methods.push_back(m.full_name);
  }
  return out;
}

std::vector<std::pair<const char*, uint64_t>> StatsFields(const memory::MemoryStats& s) {
  return {{"acquired", s.acquired},
          {"released", s.released},
          {"page_allocations", s.page_allocations},
          {"page_cache_hits", s.page_cache_hits},
          {"page_cache_misses", s.page_cache_misses},
          {"pages_cached", s.pages_cached},
          {"pages_outstanding", s.pages_outstanding},
          {"reuses", s.reuses},
          {"rebuilds", s.rebuilds},
          {"trims", s.trims},
          {"objects_pooled", s.objects_pooled},
          {"retained_bytes_estimate", s.retained_bytes_estimate},
          {"requests_shaped", s.requests_shaped},
          {"responses_mirrored", s.responses_mirrored},
          {"calls_on_arena", s.calls_on_arena}};
}

void WriteStrategiesJson(JsonWriter& json, const std::vector<StrategyTotals>& strategies) {
  json.BeginArray();
  for (const StrategyTotals& s : strategies) {
    json.BeginObject().Field("strategy", s.mode);
    json.Key("methods").BeginArray();
    for (const std::string& method : s.methods) json.String(method);
    json.EndArray();
    for (const auto& [name, value] : StatsFields(s.totals)) json.Field(name, value);
    json.EndObject();
  }
  json.EndArray();
}

namespace {

std::string MethodList(const StrategyTotals& s) {
  std::string list;
  for (const std::string& method : s.methods) list += (list.empty() ? "" : ", ") + method;
  return list;
}

}  // namespace

std::string StrategiesText(const std::vector<StrategyTotals>& strategies) {
  std::string text;
  for (const StrategyTotals& s : strategies) {
    text += "strategy " + s.mode + " (totals of its methods: " + MethodList(s) + ")\n";
    for (const auto& [name, value] : StatsFields(s.totals)) {
      text += std::string("  ") + name + " = " + std::to_string(value) + "\n";
    }
  }
  return text;
}

std::string StrategiesHtml(const std::vector<StrategyTotals>& strategies) {
  std::string html;
  for (const StrategyTotals& s : strategies) {
    html += "<h2>strategy " + HtmlEscape(s.mode) +
            " &mdash; totals of its methods: " + HtmlEscape(MethodList(s)) +
            "</h2>\n<table class=\"counters\">\n";
    for (const auto& [name, value] : StatsFields(s.totals)) {
      html += std::string("<tr><th>") + name + "</th><td>" + std::to_string(value) + "</td></tr>\n";
    }
    html += "</table>\n";
  }
  return html;
}

}  // namespace arenarpc::builtin
