#include "builtin/rpcz_page.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <string_view>

#include "builtin/page_format.h"
#include "stats/span_store.h"
#include "util/hex.h"

namespace arenarpc::builtin {
namespace {

using stats::SpanStore;
using SpanPtr = std::shared_ptr<const Span>;
using util::Hex;

constexpr size_t kDefaultLimit = 100;
constexpr size_t kMaxLimit = 1000;

std::string TraceIdHex(const TraceContext& trace) {
  return trace.trace_id_high != 0 ? Hex(trace.trace_id_high) + Hex(trace.trace_id)
                                  : Hex(trace.trace_id);
}

// A trace id as the page shows it: 32 hex digits, or up to 16 for a 64-bit (baidu_std) id.
std::optional<std::pair<uint64_t, uint64_t>> ParseTraceId(std::string_view text) {
  auto hex = [](std::string_view digits, uint64_t* value) {
    const auto [end, error] =
        std::from_chars(digits.data(), digits.data() + digits.size(), *value, 16);
    return error == std::errc() && end == digits.data() + digits.size();
  };
  uint64_t high = 0, low = 0;
  if (text.size() == 32 && hex(text.substr(0, 16), &high) && hex(text.substr(16), &low)) {
    return std::make_pair(high, low);
  }
  if (!text.empty() && text.size() <= 16 && hex(text, &low)) return std::make_pair(0ull, low);
  return std::nullopt;
}

double Micros(std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1000.0; }

int64_t UnixMicros(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

std::string_view KindName(SpanKind kind) { return kind == SpanKind::kServer ? "server" : "client"; }

void WriteSpanJson(JsonWriter& json, const Span& span) {
  json.BeginObject();
  json.Field("kind", KindName(span.kind));
  json.Field("method", span.method);
  json.Field("protocol", span.protocol);
  json.Field("peer", span.peer);
  json.Field("trace_id", TraceIdHex(span.trace));
  json.Field("span_id", Hex(span.trace.span_id));
  json.Field("parent_span_id", Hex(span.trace.parent_span_id));
  json.Field("start_unix_us", UnixMicros(span.start_time));
  json.Field("latency_us", Micros(span.latency));
  json.Key("phases_us").BeginObject();
  for (size_t i = 0; i < kSpanPhaseCount; ++i) {
    if (span.phases[i]) json.Field(SpanPhaseName(static_cast<SpanPhase>(i)), Micros(*span.phases[i]));
  }
  json.EndObject();
  json.Field("request_bytes", span.request_bytes);
  json.Field("response_bytes", span.response_bytes);
  json.Field("request_compression", span.request_compression);
  json.Field("response_compression", span.response_compression);
  if (span.kind == SpanKind::kServer) {
    json.Field("memory_strategy", span.memory_strategy);
    if (span.message_bytes) {
      json.Field("message_bytes", *span.message_bytes);
      json.Field("message_bytes_source", span.message_bytes_source);
    }
  }
  json.Field("error_code", span.error_code);
  json.Field("error_text", span.error_text);
  json.Key("annotations").BeginArray();
  for (const SpanAnnotation& a : span.annotations) {
    json.BeginObject().Field("offset_us", Micros(a.offset)).Field("text", a.text).EndObject();
  }
  json.EndArray();
  json.Field("annotations_dropped", static_cast<uint64_t>(span.annotations_dropped));
  json.EndObject();
}

// One span as text lines: a summary, then its phases and annotations in time order.
std::string SpanText(const Span& span, std::string_view indent) {
  std::string out(indent);
  out += UtcTime(UnixMicros(span.start_time) / 1000) + " " + std::string(KindName(span.kind)) +
         " " + span.method + " " + span.protocol + " " + span.peer + " " +
         FormatDouble(Micros(span.latency), 1) + "us";
  out += span.error_code != 0 ? " error " + std::to_string(span.error_code) + " " + span.error_text
                              : " ok";
  out += " trace=" + TraceIdHex(span.trace) + " span=" + Hex(span.trace.span_id) +
         " parent=" + Hex(span.trace.parent_span_id) + "\n";
  out += std::string(indent) + "  bytes in/out " + std::to_string(span.request_bytes) + "/" +
         std::to_string(span.response_bytes) + " compression " + span.request_compression + "/" +
         span.response_compression;
  if (span.kind == SpanKind::kServer) {
    out += " memory " + span.memory_strategy;
    if (span.message_bytes) {
      out += " held " + std::to_string(*span.message_bytes) + " (" + span.message_bytes_source + ")";
    }
  }
  out += "\n";
  // Phases and annotations merged by offset.
  std::vector<std::pair<std::chrono::nanoseconds, std::string>> events;
  for (size_t i = 0; i < kSpanPhaseCount; ++i) {
    if (span.phases[i]) {
      events.emplace_back(*span.phases[i], std::string(SpanPhaseName(static_cast<SpanPhase>(i))));
    }
  }
  for (const SpanAnnotation& a : span.annotations) events.emplace_back(a.offset, "# " + a.text);
  std::stable_sort(events.begin(), events.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [offset, text] : events) {
    out += std::string(indent) + "  " + FormatDouble(Micros(offset), 1) + "us " + text + "\n";
  }
  if (span.annotations_dropped != 0) {
    out += std::string(indent) + "  (" + std::to_string(span.annotations_dropped) +
           " annotations dropped)\n";
  }
  return out;
}

// The spans of one trace as a tree: a server span is the child of the client span that sent it
// (the same span id, brpc's way; or its parent id, W3C's), a client span of the server span whose
// handler made it. Depth-first, children by start time.
std::vector<std::pair<SpanPtr, int>> TraceTree(const std::vector<SpanPtr>& spans) {
  const size_t n = spans.size();
  std::vector<int> parent(n, -1);
  auto find = [&](size_t i, SpanKind kind, uint64_t span_id) {
    for (size_t j = 0; j < n; ++j) {
      if (j != i && span_id != 0 && spans[j]->kind == kind && spans[j]->trace.span_id == span_id) {
        return static_cast<int>(j);
      }
    }
    return -1;
  };
  for (size_t i = 0; i < n; ++i) {
    const Span& s = *spans[i];
    if (s.kind == SpanKind::kServer) {
      parent[i] = find(i, SpanKind::kClient, s.trace.span_id);  // brpc: one id for both sides
      if (parent[i] < 0) parent[i] = find(i, SpanKind::kClient, s.trace.parent_span_id);
    } else {
      parent[i] = find(i, SpanKind::kServer, s.trace.parent_span_id);
    }
  }
  std::vector<std::pair<SpanPtr, int>> order;
  std::vector<bool> placed(n, false);
  auto visit = [&](auto&& self, size_t index, int depth) -> void {
    if (placed[index]) return;  // ids that point at each other: shown once
    placed[index] = true;
    order.emplace_back(spans[index], depth);
    for (size_t j = 0; j < n; ++j) {
      if (parent[j] == static_cast<int>(index)) self(self, j, depth + 1);
    }
  };
  for (size_t i = 0; i < n; ++i) {
    if (parent[i] < 0) visit(visit, i, 0);
  }
  for (size_t i = 0; i < n; ++i) visit(visit, i, 0);  // cycles
  return order;
}

std::string HtmlSpanRows(const std::vector<std::pair<SpanPtr, int>>& rows, bool timeline) {
  std::chrono::system_clock::time_point first = std::chrono::system_clock::time_point::max();
  std::chrono::system_clock::time_point last = std::chrono::system_clock::time_point::min();
  for (const auto& [span, depth] : rows) {
    first = std::min(first, span->start_time);
    last = std::max(last, span->start_time + std::chrono::duration_cast<
                                                 std::chrono::system_clock::duration>(span->latency));
  }
  const double total_us = std::max(1.0, static_cast<double>(UnixMicros(last) - UnixMicros(first)));
  std::string html =
      "<table><tr><th>start</th><th>kind</th><th>method</th><th>protocol</th><th>peer</th>"
      "<th>latency us</th><th>bytes in/out</th><th>memory</th><th>held</th><th>error</th>"
      "<th>trace</th>" +
      std::string(timeline ? "<th>timeline</th>" : "") + "</tr>";
  for (const auto& [span, depth] : rows) {
    const std::string trace = TraceIdHex(span->trace);
    html += "<tr><td>" + UtcTime(UnixMicros(span->start_time) / 1000) + "</td><td>" +
            std::string(KindName(span->kind)) + "</td><td style=\"padding-left:" +
            std::to_string(depth * 16 + 4) + "px\">" + HtmlEscape(span->method) + "</td><td>" +
            HtmlEscape(span->protocol) + "</td><td>" + HtmlEscape(span->peer) + "</td><td>" +
            FormatDouble(Micros(span->latency), 1) + "</td><td>" +
            std::to_string(span->request_bytes) + "/" + std::to_string(span->response_bytes) +
            "</td><td>" + HtmlEscape(span->memory_strategy) + "</td><td>" +
            (span->message_bytes ? std::to_string(*span->message_bytes) : std::string("-")) +
            "</td><td>" +
            (span->error_code != 0
                 ? std::to_string(span->error_code) + " " + HtmlEscape(span->error_text)
                 : std::string()) +
            "</td><td><a href=\"/rpcz?trace=" + trace + "\">" + trace + "</a></td>";
    if (timeline) {
      const double left =
          100.0 * static_cast<double>(UnixMicros(span->start_time) - UnixMicros(first)) / total_us;
      const double width = std::max(0.5, 100.0 * Micros(span->latency) / total_us);
      html += "<td style=\"width:300px\"><div style=\"margin-left:" + FormatDouble(left, 1) +
              "%;width:" + FormatDouble(width, 1) +
              "%;background:#2a6fdb;height:10px\"></div></td>";
    }
    html += "</tr><tr><td></td><td colspan=\"10\"><pre>" + HtmlEscape(SpanText(*span, "")) +
            "</pre></td></tr>";
  }
  return html + "</table>";
}

bool ParseQuery(const BuiltinRequest& request, SpanStore::Query* query, std::string* error) {
  auto get = [&](const char* key) -> const std::string* {
    auto it = request.query.find(key);
    return it == request.query.end() ? nullptr : &it->second;
  };
  if (const std::string* view = get("view")) {
    if (*view == "latest") {
      query->view = SpanStore::View::kLatest;
    } else if (*view == "slowest") {
      query->view = SpanStore::View::kSlowest;
    } else if (*view == "failed") {
      query->view = SpanStore::View::kFailed;
    } else {
      *error = "view must be latest, slowest or failed, got '" + *view + "'";
      return false;
    }
  }
  if (const std::string* method = get("method")) query->method = *method;
  if (const std::string* min = get("min_latency_ms")) {
    double ms = 0;
    const auto [end, ec] = std::from_chars(min->data(), min->data() + min->size(), ms);
    if (ec != std::errc() || end != min->data() + min->size() || ms < 0) {
      *error = "min_latency_ms must be a non-negative number, got '" + *min + "'";
      return false;
    }
    query->min_latency = std::chrono::nanoseconds(static_cast<int64_t>(ms * 1e6));
  }
  if (const std::string* failed = get("error")) query->failed_only = *failed == "1" || *failed == "true";
  query->limit = kDefaultLimit;
  if (const std::string* limit = get("limit")) {
    size_t n = 0;
    const auto [end, ec] = std::from_chars(limit->data(), limit->data() + limit->size(), n);
    if (ec != std::errc() || end != limit->data() + limit->size() || n == 0) {
      *error = "limit must be a positive number, got '" + *limit + "'";
      return false;
    }
    query->limit = std::min(n, kMaxLimit);
  }
  if (const std::string* trace = get("trace")) {
    query->trace_id = ParseTraceId(*trace);
    if (!query->trace_id) {
      *error = "trace must be a trace id of 16 or 32 hex digits, got '" + *trace + "'";
      return false;
    }
  }
  return true;
}

void ServeRpcz(const BuiltinRequest& request, BuiltinReply* reply) {
  if (RejectUnlessGet(request, reply)) return;
  SpanStore::Query query;
  std::string error;
  if (!ParseQuery(request, &query, &error)) {
    reply->status = 400;
    reply->body = error + "\n";
    return;
  }
  const SpanStore& store = SpanStore::Default();
  const bool trace_view = query.trace_id.has_value() && request.query.count("view") == 0;
  std::vector<std::pair<SpanPtr, int>> rows;
  if (trace_view) {
    rows = TraceTree(store.FindTrace(query.trace_id->first, query.trace_id->second));
  } else {
    for (SpanPtr& span : store.Find(query)) rows.emplace_back(std::move(span), 0);
  }
  const SpanStore::Counts counts = store.counts();
  const int budget = RpczSpansPerSecond();
  if (WantsJson(request)) {
    JsonWriter json;
    json.BeginObject();
    json.Field("spans_per_second", budget);
    json.Key("store").BeginObject();
    json.Field("latest", static_cast<uint64_t>(counts.latest));
    json.Field("latest_bytes", static_cast<uint64_t>(counts.latest_bytes));
    json.Field("slowest", static_cast<uint64_t>(counts.slowest));
    json.Field("failed", static_cast<uint64_t>(counts.failed));
    json.Field("added", counts.added);
    json.Field("evicted", counts.evicted);
    json.EndObject();
    json.Key("spans").BeginArray();
    for (const auto& [span, depth] : rows) WriteSpanJson(json, *span);
    json.EndArray();
    if (trace_view) {
      json.Key("depths").BeginArray();
      for (const auto& [span, depth] : rows) json.Number(depth);
      json.EndArray();
    }
    json.EndObject();
    reply->content_type = "application/json";
    reply->body = json.Take();
    return;
  }
  const std::string summary =
      "spans sampled per second: " + std::to_string(budget) +
      (budget == 0 ? " (rpcz is off: /flags/rpcz_spans_per_second?setvalue=N turns it on)" : "") +
      "; stored: " + std::to_string(counts.latest) + " latest (" +
      std::to_string(counts.latest_bytes) + " bytes), " + std::to_string(counts.slowest) +
      " slowest, " + std::to_string(counts.failed) + " failed";
  if (WantsHtml(request)) {
    std::string html = HtmlHead("rpcz");
    html += "<h1>rpcz</h1><p>" + HtmlEscape(summary) +
            "</p><p><a href=\"/rpcz\">latest</a> | <a href=\"/rpcz?view=slowest\">slowest</a> | "
            "<a href=\"/rpcz?view=failed\">failed</a></p>";
    html += HtmlSpanRows(rows, trace_view);
    html += "</body></html>\n";
    reply->content_type = "text/html; charset=utf-8";
    reply->body = std::move(html);
    return;
  }
  std::string text = summary + "\n\n";
  for (const auto& [span, depth] : rows) text += SpanText(*span, std::string(depth * 4, ' '));
  if (rows.empty()) text += "no span matches\n";
  reply->body = std::move(text);
}

}  // namespace

void AddRpczPage(BuiltinRegistry* registry) {
  registry->Add("/rpcz", "sampled calls with the time of each phase and what their messages held",
                ServeRpcz);
}

}  // namespace arenarpc::builtin
