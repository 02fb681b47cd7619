#include "builtin/memory_page.h"

#include <chrono>
#include <ctime>
#include <utility>
#include <vector>

#include "builtin/memory_strategies.h"
#include "builtin/page_view.h"

namespace arenarpc::builtin {
namespace {

double BytesPerCall(const MethodStats& m) {
  return m.arena_calls == 0 ? 0.0
                            : static_cast<double>(m.arena_bytes) / static_cast<double>(m.arena_calls);
}

// (name, value) of one method's own memory, in the order both formats show them.
std::vector<std::pair<const char*, uint64_t>> MemoryCounters(const MethodStats& m) {
  std::vector<std::pair<const char*, uint64_t>> counters = {{"arena_bytes", m.arena_bytes},
                                                            {"arena_calls", m.arena_calls}};
  for (const auto& field : StatsFields(m.method_memory)) counters.push_back(field);
  return counters;
}

void WriteChoiceJson(JsonWriter& json, const memory::MemoryChoice& c) {
  json.Key("auto")
      .BeginObject()
      .Field("chosen", c.chosen)
      .Field("in_trial", c.in_trial)
      .Field("trials", c.trials)
      .Field("switches", c.switches)
      .Field("decided_unix_ms", c.decided_unix_ms)
      .Field("chosen_cpu_ns_per_call", c.chosen_cpu_ns)
      .Field("reference_wire_bytes", c.reference_bytes)
      .Field("model_fixed_ns", c.fixed_ns)
      .Field("model_ns_per_kib", c.ns_per_kib)
      .Field("reason", c.reason);
  json.Key("candidates").BeginArray();
  for (const auto& candidate : c.candidates) {
    json.BeginObject()
        .Field("name", candidate.name)
        .Field("samples", candidate.samples)
        .Field("cpu_ns_per_call", candidate.cpu_ns)
        .Field("cpu_ns_per_call_low", candidate.cpu_ns_low)
        .Field("cpu_ns_per_call_high", candidate.cpu_ns_high)
        .Field("measured_cpu_ns_per_call", candidate.raw_cpu_ns)
        .Field("wire_bytes_per_call", candidate.wire_bytes)
        .Field("comparable", candidate.comparable)
        .Field("held_bytes_per_call", candidate.held_bytes)
        .EndObject();
  }
  json.EndArray();
  json.Key("history").BeginArray();
  for (const auto& d : c.history) {
    json.BeginObject()
        .Field("unix_ms", d.unix_ms)
        .Field("from", d.from)
        .Field("to", d.to)
        .Field("switched", d.from != d.to)
        .Field("reason", d.reason)
        .EndObject();
  }
  json.EndArray().EndObject();
}

std::string HistoryLine(const memory::MemoryChoice::Decision& d) {
  return UtcTime(d.unix_ms) + " " + (d.from == d.to ? "kept " + d.to : d.from + " -> " + d.to) +
         ": " + d.reason;
}

std::string ChoiceText(const memory::MemoryChoice& c) {
  std::string text = "  auto: serving with " + c.chosen + (c.in_trial ? " (trial running)" : "") +
                     ", " + std::to_string(c.trials) + " trials, " +
                     std::to_string(c.switches) + " switches\n";
  text += "  auto: " + c.reason + "\n";
  text += "  auto: per call of " + std::to_string(c.reference_bytes) + " wire bytes (model " +
          FormatDouble(c.fixed_ns / 1000.0, 2) + " us + " + FormatDouble(c.ns_per_kib / 1000.0, 3) +
          " us/KiB):\n";
  for (const auto& candidate : c.candidates) {
    text += "    " + candidate.name + ": " + FormatDouble(candidate.cpu_ns / 1000.0, 2) +
            " us CPU/call [" + FormatDouble(candidate.cpu_ns_low / 1000.0, 2) + "-" +
            FormatDouble(candidate.cpu_ns_high / 1000.0, 2) + "], measured " +
            FormatDouble(candidate.raw_cpu_ns / 1000.0, 2) + " us on calls of " +
            std::to_string(candidate.wire_bytes) + " bytes, " +
            std::to_string(candidate.held_bytes) + " bytes held/call (" +
            std::to_string(candidate.samples) + " calls)\n";
  }
  text += "  auto: last " + std::to_string(c.history.size()) + " decisions, oldest first:\n";
  for (const auto& d : c.history) text += "    " + HistoryLine(d) + "\n";
  return text;
}

std::string AdviceText(const std::vector<memory::PresenceAdvice>& advice) {
  std::string text;
  for (const auto& a : advice) {
    text += "  advice: " + a.field + " holds " + FormatDouble(100 * a.share, 1) +
            "% of a response; declare it `" + a.suggested + "` instead of `" + a.declared +
            "` (the same wire bytes) so that reuse keeps its subtree\n";
  }
  return text;
}

// The last 10 minutes, one point per 10 s: {held_bytes_per_call, cpu_us_per_call, samples}.
void WriteSeriesJson(JsonWriter& json, const stats::MethodView& m) {
  json.Key("last_10_minutes").BeginArray();
  for (const stats::MemoryPoint& p : m.memory_points) {
    json.BeginObject()
        .Field("held_bytes_per_call", p.held_bytes_per_call())
        .Field("cpu_us_per_call", p.cpu_ns_per_call() / 1000)
        .Field("held_samples", p.held_samples)
        .Field("cpu_samples", p.cpu_samples)
        .EndObject();
  }
  json.EndArray();
}

// Where auto's decisions of the charts' last 10 minutes fall on them (0 = the oldest point).
std::vector<double> DecisionMarks(const MethodStats& m, int64_t now_unix_ms) {
  std::vector<double> marks;
  if (!m.memory_choice) return marks;
  constexpr int64_t kSpanMs =
      int64_t{stats::MemorySeries::kPoints} * stats::MemorySeries::kPointSeconds * 1000;
  for (const auto& d : m.memory_choice->history) {
    const int64_t age = now_unix_ms - d.unix_ms;
    if (age >= 0 && age < kSpanMs) marks.push_back(1 - static_cast<double>(age) / kSpanMs);
  }
  return marks;
}

std::string MethodHtml(const stats::MethodView& view, int64_t now_unix_ms) {
  const MethodStats& m = view.stats;
  std::vector<double> held, cpu;
  for (const stats::MemoryPoint& p : view.memory_points) {
    held.push_back(p.held_bytes_per_call() / 1024);
    cpu.push_back(p.cpu_ns_per_call() / 1000);
  }
  const std::vector<double> marks = DecisionMarks(m, now_unix_ms);
  const char* marked = marks.empty() ? "" : "; red lines: decisions of auto";
  std::string html =
      "<h2>" + HtmlEscape(m.full_name) + " &mdash; " + HtmlEscape(m.memory_mode) + "</h2>\n<p>" +
      SvgLine(held, std::string("KiB held per call, last 10 min") + marked, 1, marks) + "<br>" +
      SvgLine(cpu, std::string("CPU us per call, last 10 min") + marked, 1, marks) + "</p>\n";
  if (const auto& c = m.memory_choice) {
    html += "<p>auto: serving with <b>" + HtmlEscape(c->chosen) + "</b>" +
            (c->in_trial ? " (trial running)" : "") + ", " + std::to_string(c->trials) +
            " trials, " + std::to_string(c->switches) + " switches. " + HtmlEscape(c->reason) +
            "</p>\n<table><tr><th>candidate</th><th>CPU us/call</th><th>held bytes/call</th>"
            "<th>calls measured</th></tr>\n";
    for (const auto& candidate : c->candidates) {
      const bool chosen = candidate.name == c->chosen;
      html += std::string("<tr><td>") + (chosen ? "<b>" : "") + HtmlEscape(candidate.name) +
              (chosen ? "</b>" : "") + "</td><td>" + FormatDouble(candidate.cpu_ns / 1000.0, 2) +
              "</td><td>" + std::to_string(candidate.held_bytes) + "</td><td>" +
              std::to_string(candidate.samples) + "</td></tr>\n";
    }
    html += "</table>\n<p>Last decisions, oldest first:</p>\n<ul>\n";
    for (const auto& d : c->history) html += "<li>" + HtmlEscape(HistoryLine(d)) + "</li>\n";
    html += "</ul>\n";
  }
  for (const auto& a : m.presence_advice) {
    html += "<p class=\"note\">advice: <code>" + HtmlEscape(a.field) + "</code> holds " +
            FormatDouble(100 * a.share, 1) + "% of a response; declare it <code>" +
            HtmlEscape(a.suggested) + "</code> (the same wire bytes) so that reuse keeps its "
            "subtree</p>\n";
  }
  html += "<table class=\"counters\">\n";
  html += "<tr><th>arena bytes per call</th><td>" + FormatDouble(BytesPerCall(m), 1) +
          "</td></tr>\n";
  for (const auto& [name, value] : MemoryCounters(m)) {
    html += std::string("<tr><th>") + name + "</th><td>" + std::to_string(value) + "</td></tr>\n";
  }
  return html + "</table>\n";
}

void ServeMemory(const stats::ServerView& view, const BuiltinRequest& request,
                 BuiltinReply* reply) {
  if (RejectUnlessGet(request, reply)) return;
  const std::vector<stats::MethodView> methods = view.Methods(std::chrono::steady_clock::now());
  if (WantsJson(request)) {
    JsonWriter json;
    json.BeginObject().Key("methods").BeginObject();
    for (const stats::MethodView& m : methods) {
      json.Key(m.stats.full_name);
      WriteMethodMemoryJson(json, m.stats, &m);
    }
    json.EndObject().Key("strategies");
    WriteStrategiesJson(json, stats::GroupByStrategy(methods));
    json.EndObject();
    reply->content_type = "application/json";
    reply->body = json.Take() + "\n";
    return;
  }
  if (WantsHtml(request)) {
    std::string html = HtmlHead("arenarpc memory") + "<h1>arenarpc message memory</h1>\n";
    const int64_t now_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
    for (const stats::MethodView& m : methods) html += MethodHtml(m, now_unix_ms);
    html += StrategiesHtml(stats::GroupByStrategy(methods));
    html +=
        "<p class=\"note\">Charts: sampled calls (held bytes: every arena call and one in 32 "
        "others; CPU: one call in 16 timed whole on its thread). Each method's counters are "
        "its own (reuse: the pools of its message types); the strategies' totals, shared by "
        "the methods they serve, are listed once. JSON: <code>/memory?format=json"
        "</code></p>\n</body></html>\n";
    reply->content_type = "text/html; charset=utf-8";
    reply->body = std::move(html);
    return;
  }
  std::string text;
  for (const stats::MethodView& view_of : methods) {
    const MethodStats& m = view_of.stats;
    text += m.full_name + "\n";
    text += "  strategy = " + m.memory_mode + "\n";
    if (m.memory_choice) text += ChoiceText(*m.memory_choice);
    text += AdviceText(m.presence_advice);
    text += "  arena_bytes_per_call = " + FormatDouble(BytesPerCall(m), 1) + "\n";
    for (const auto& [name, value] : MemoryCounters(m)) {
      text += std::string("  ") + name + " = " + std::to_string(value) + "\n";
    }
  }
  text += StrategiesText(stats::GroupByStrategy(methods));
  text +=
      "(each method's counters are its own, reuse's pools those of its message types; the "
      "strategies' totals above; charts: /memory?format=html)\n";
  reply->body = std::move(text);
}

}  // namespace

void WriteMethodMemoryJson(JsonWriter& json, const MethodStats& m, const stats::MethodView* view) {
  json.BeginObject()
      .Field("strategy", m.memory_mode)
      .Field("arena_bytes_per_call", BytesPerCall(m));
  for (const auto& [name, value] : MemoryCounters(m)) json.Field(name, value);
  if (m.memory_choice) WriteChoiceJson(json, *m.memory_choice);
  json.Key("presence_advice").BeginArray();
  for (const auto& a : m.presence_advice) {
    json.BeginObject()
        .Field("field", a.field)
        .Field("declared", a.declared)
        .Field("suggested", a.suggested)
        .Field("share", a.share)
        .EndObject();
  }
  json.EndArray();
  if (view != nullptr) WriteSeriesJson(json, *view);
  json.EndObject();
}

void AddMemoryPage(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view) {
  registry->Add("/memory", "per-method message memory: strategy, arena bytes per call, pools",
                BindView(view, ServeMemory));
}

}  // namespace arenarpc::builtin
