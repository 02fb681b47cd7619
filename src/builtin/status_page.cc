#include "builtin/status_page.h"

#include <algorithm>
#include <array>
#include <chrono>

#include "arenarpc/error_codes.h"
#include "builtin/memory_page.h"
#include "builtin/memory_strategies.h"
#include "builtin/page_format.h"
#include "builtin/page_view.h"
#include "builtin/stream_fields.h"
#include "stats/process_stats.h"

namespace arenarpc::builtin {
namespace {

using Clock = std::chrono::steady_clock;
using PerSecond = std::array<uint64_t, 60>;

using stats::MethodView;

std::string CodeLabel(int code) {
  return code == 0 ? std::string("other") : std::to_string(code);
}

// ---- JSON

void WriteWindow(JsonWriter& json, const WindowStats& w) {
  json.BeginObject()
      .Field("seconds", w.seconds)
      .Field("covered_seconds", w.covered_seconds)
      .Field("calls", w.calls)
      .Field("errors", w.errors)
      .Field("qps", w.qps)
      .Field("p50_us", w.latency_p50_us)
      .Field("p90_us", w.latency_p90_us)
      .Field("p99_us", w.latency_p99_us)
      .Field("p999_us", w.latency_p999_us)
      .Field("max_us", w.latency_max_us)
      .Field("mean_us", w.latency_mean_us)
      .EndObject();
}

void WriteServer(JsonWriter& json, const ServerStats& s) {
  json.BeginObject()
      .Field("connections_open", s.connections_open)
      .Field("connections_accepted", s.connections_accepted)
      .Field("connections_closed_idle", s.connections_closed_idle)
      .Field("connections_closed_read_timeout", s.connections_closed_read_timeout)
      .Field("connections_closed_first_byte_timeout", s.connections_closed_first_byte_timeout)
      .Field("connections_closed_write_timeout", s.connections_closed_write_timeout)
      .Field("connections_rejected", s.connections_rejected)
      .Field("malformed_frames", s.malformed_frames)
      .Field("requests", s.requests)
      .Field("rejected_stopping", s.rejected_stopping)
      .Field("rejected_limit", s.rejected_limit)
      .Field("rejected_unknown", s.rejected_unknown)
      .Field("rejected_overcrowded", s.rejected_overcrowded)
      .Field("rejected_timed_out", s.rejected_timed_out)
      .Field("rejected_queue_wait", s.rejected_queue_wait)
      .Field("canceled_before_start", s.canceled_before_start)
      .Field("read_pauses", s.read_pauses)
      .Field("refused_bytes_unread", s.refused_bytes_unread)
      .Field("unwritten_held_bytes", s.unwritten_held_bytes)
      .Field("in_flight", s.in_flight)
      .Field("queued", s.queued)
      .Field("concurrency_limit", s.concurrency_limit)
      .EndObject();
}

std::string StatusJson(const std::vector<MethodView>& methods, const ServerStats& server,
                       const stats::ProcessStats& process) {
  JsonWriter json;
  json.BeginObject().Key("server");
  WriteServer(json, server);
  json.Key("process")
      .BeginObject()
      .Field("cpu_usage_us", process.cpu_us())
      .Field("rss_bytes", process.rss_bytes)
      .Field("fd_count", process.fd_count)
      .Field("thread_count", process.thread_count)
      .EndObject();
  json.Key("methods").BeginArray();
  for (const MethodView& view : methods) {
    const MethodStats& m = view.stats;
    json.BeginObject()
        .Field("name", m.full_name)
        .Field("calls", m.calls)
        .Field("errors", m.errors)
        .Field("rejected", m.rejected)
        .Field("in_flight", m.in_flight)
        .Field("max_in_flight", m.max_in_flight);
    json.Key("errors_by_code").BeginObject();
    for (const ErrorCodeCount& e : m.errors_by_code) json.Field(CodeLabel(e.code), e.count);
    json.EndObject();
    json.Key("last_10s");
    WriteWindow(json, m.last_10s);
    json.Key("last_60s");
    WriteWindow(json, m.last_60s);
    json.Key("since_start")
        .BeginObject()
        .Field("calls", m.calls)
        .Field("p50_us", m.latency_p50_us)
        .Field("p90_us", m.latency_p90_us)
        .Field("p99_us", m.latency_p99_us)
        .Field("p999_us", m.latency_p999_us)
        .Field("max_us", m.latency_max_us)
        .Field("mean_us", m.latency_mean_us)
        .Field("sum_us", m.latency_sum_us)
        .EndObject();
    json.Key("calls_per_second_last_60s").BeginArray();
    for (uint64_t n : view.calls_per_second) json.Number(n);
    json.EndArray();
    json.Key("memory");
    WriteMethodMemoryJson(json, m);
    const stats::MethodStreams& streams = view.streams;
    json.Key("streams")
        .BeginObject()
        .Field("open", streams.open)
        .Field("opened", streams.opened)
        .Field("oldest_age_seconds", streams.oldest_age_seconds);
    WriteStreamTrafficFields(json, streams.traffic, streams.buffered_in_bytes,
                             streams.buffered_out_bytes);
    json.EndObject().EndObject();
  }
  json.EndArray().Key("memory_strategies");
  WriteStrategiesJson(json, stats::GroupByStrategy(methods));
  json.EndObject();
  return json.Take() + "\n";
}

// ---- HTML

std::string Sparkline(const PerSecond& counts) {
  std::vector<double> values(counts.begin(), counts.end());
  return SvgLine(values, "calls/s, last 60 s");
}

void Row(std::string& html, std::string_view name, const std::string& value) {
  html.append("<tr><th>").append(HtmlEscape(name)).append("</th><td>").append(value).append(
      "</td></tr>\n");
}

// qps < 0: not known for this row.
std::string LatencyRow(std::string_view label, double qps, uint64_t calls, int64_t p50,
                       int64_t p90, int64_t p99, int64_t p999, int64_t max, double mean) {
  std::string row = "<tr><th>" + std::string(label) + "</th><td>" +
                    (qps < 0 ? std::string("-") : FormatDouble(qps, 1)) + "</td><td>" +
                    std::to_string(calls) + "</td>";
  for (int64_t v : {p50, p90, p99, p999, max}) row += "<td>" + std::to_string(v) + "</td>";
  row += "<td>" + FormatDouble(mean, 1) + "</td></tr>\n";
  return row;
}

std::string MethodHtml(const MethodView& view) {
  const MethodStats& m = view.stats;
  std::string html = "<h2>" + HtmlEscape(m.full_name) + "</h2>\n<p><a href=\"/rpcz?method=" +
                     HtmlEscape(m.full_name) + "\">sampled calls (rpcz)</a></p>\n";
  html += Sparkline(view.calls_per_second) + "\n";
  html += "<table class=\"latency\"><tr><th>window</th><th>qps</th><th>calls</th>"
          "<th>p50 µs</th><th>p90 µs</th><th>p99 µs</th><th>p99.9 µs</th><th>max µs</th>"
          "<th>mean µs</th></tr>\n";
  for (const WindowStats* w : {&m.last_10s, &m.last_60s}) {
    html += LatencyRow("last " + std::to_string(w->seconds) + " s", w->qps, w->calls,
                       w->latency_p50_us, w->latency_p90_us, w->latency_p99_us,
                       w->latency_p999_us, w->latency_max_us, w->latency_mean_us);
  }
  html += LatencyRow("since start", -1, m.calls, m.latency_p50_us, m.latency_p90_us,
                     m.latency_p99_us, m.latency_p999_us, m.latency_max_us, m.latency_mean_us);
  html += "</table>\n<table class=\"counters\">\n";
  Row(html, "calls", std::to_string(m.calls));
  Row(html, "errors", std::to_string(m.errors));
  Row(html, "rejected", std::to_string(m.rejected));
  std::string by_code;
  for (const ErrorCodeCount& e : m.errors_by_code) {
    by_code += (by_code.empty() ? "" : ", ") + CodeLabel(e.code) +
               (e.code != 0 ? std::string(" ") + HtmlEscape(ErrorCodeName(e.code)) : "") +
               ": " + std::to_string(e.count);
  }
  Row(html, "errors by code", by_code.empty() ? "none" : by_code);
  Row(html, "in flight (max)",
      std::to_string(m.in_flight) + " (" + std::to_string(m.max_in_flight) + ")");
  if (const stats::MethodStreams& streams = view.streams; streams.opened > 0) {
    Row(html, "streams open (since start)",
        std::to_string(streams.open) + " (" + std::to_string(streams.opened) + "), oldest " +
            FormatDouble(streams.oldest_age_seconds, 1) + " s");
    Row(html, "stream traffic (buffered: open streams)",
        StreamTrafficText(streams.traffic, streams.buffered_in_bytes,
                          streams.buffered_out_bytes));
  }
  const memory::MemoryStats& s = m.method_memory;  // the strategy's totals: StrategiesHtml
  Row(html, "memory strategy", HtmlEscape(m.memory_mode));
  if (const auto& c = m.memory_choice) {
    std::string figures;
    for (const auto& candidate : c->candidates) {
      figures += (figures.empty() ? "" : ", ") + HtmlEscape(candidate.name) + " " +
                 FormatDouble(candidate.cpu_ns / 1000.0, 2) + " us";
    }
    Row(html, "auto: serving with",
        HtmlEscape(c->chosen) + (c->in_trial ? " (trial running)" : "") + "; " +
            std::to_string(c->trials) + " trials, " + std::to_string(c->switches) +
            " switches");
    Row(html, "auto: CPU per call (last trial)", figures);
    Row(html, "auto: last decision", HtmlEscape(c->reason));
  }
  Row(html, "arena bytes per call",
      m.arena_calls == 0 ? "-" : FormatDouble(static_cast<double>(m.arena_bytes) / m.arena_calls, 0));
  Row(html, "pairs acquired / released",
      std::to_string(s.acquired) + " / " + std::to_string(s.released));
  if (m.memory_mode == "reuse" || m.memory_mode == "auto") {
    Row(html, "reuses / rebuilds / trims",
        std::to_string(s.reuses) + " / " + std::to_string(s.rebuilds) + " / " +
            std::to_string(s.trims));
    Row(html, "objects pooled (its message types)", std::to_string(s.objects_pooled));
    Row(html, "retained bytes (estimate)", std::to_string(s.retained_bytes_estimate));
  }
  html += "</table>\n";
  return html;
}

std::string StatusHtml(const std::vector<MethodView>& methods, const ServerStats& s,
                       const stats::ProcessStats& p) {
  std::string html = HtmlHead("arenarpc status") +
                     "<h1>arenarpc status</h1>\n<table class=\"counters\">\n";
  Row(html, "connections open", std::to_string(s.connections_open));
  Row(html, "connections accepted", std::to_string(s.connections_accepted));
  Row(html, "requests", std::to_string(s.requests));
  Row(html, "in flight / queued",
      std::to_string(s.in_flight) + " / " + std::to_string(s.queued));
  Row(html, "concurrency limit",
      s.concurrency_limit == 0 ? "none" : std::to_string(s.concurrency_limit));
  Row(html, "malformed frames", std::to_string(s.malformed_frames));
  Row(html, "rejected: stopping / limit (queue wait) / unknown / overcrowded / timed out",
      std::to_string(s.rejected_stopping) + " / " + std::to_string(s.rejected_limit) + " (" +
          std::to_string(s.rejected_queue_wait) + ") / " + std::to_string(s.rejected_unknown) +
          " / " + std::to_string(s.rejected_overcrowded) + " / " +
          std::to_string(s.rejected_timed_out));
  Row(html, "canceled before start", std::to_string(s.canceled_before_start));
  Row(html, "unwritten held bytes", std::to_string(s.unwritten_held_bytes));
  Row(html, "process CPU s / RSS MiB / fds / threads",
      FormatDouble(static_cast<double>(p.cpu_us()) * 1e-6, 2) + " / " +
          FormatDouble(static_cast<double>(p.rss_bytes) / (1 << 20), 1) + " / " +
          std::to_string(p.fd_count) + " / " + std::to_string(p.thread_count));
  html += "</table>\n";
  for (const MethodView& view : methods) html += MethodHtml(view);
  html += StrategiesHtml(stats::GroupByStrategy(methods));
  html += "<p class=\"note\">JSON: <code>/status?format=json</code></p>\n</body></html>\n";
  return html;
}

void ServeStatus(const stats::ServerView& view, const BuiltinRequest& request,
                 BuiltinReply* reply) {
  if (RejectUnlessGet(request, reply)) return;
  const auto now = Clock::now();
  const std::vector<MethodView> methods = view.Methods(now);
  const ServerStats server = view.Server();
  const stats::ProcessStats process = stats::ReadProcessStats();
  if (WantsJson(request)) {
    reply->content_type = "application/json";
    reply->body = StatusJson(methods, server, process);
  } else {
    reply->content_type = "text/html; charset=utf-8";
    reply->body = StatusHtml(methods, server, process);
  }
}

}  // namespace

void AddStatusPage(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view) {
  registry->Add("/status", "per-method QPS, errors, latency windows and memory (HTML; ?format=json)",
                BindView(view, ServeStatus));
}

}  // namespace arenarpc::builtin
