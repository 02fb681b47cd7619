#include "builtin/memory_strategies.h"

namespace arenarpc::builtin {

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
