#include "builtin/page_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "util/json_string.h"

namespace arenarpc::builtin {

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string FormatDouble(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, std::isfinite(value) ? value : 0.0);
  return text;
}

bool WantsJson(const BuiltinRequest& request) {
  const auto it = request.query.find("format");
  return it != request.query.end() && it->second == "json";
}

bool WantsHtml(const BuiltinRequest& request) {
  if (const auto it = request.query.find("format"); it != request.query.end()) {
    return it->second == "html";
  }
  for (const auto& [name, value] : request.headers) {
    if (name == "accept" && value.find("text/html") != std::string::npos) return true;
  }
  return false;
}

std::string HtmlHead(std::string_view title) {
  return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + HtmlEscape(title) +
         "</title>\n"
         "<style>body{font-family:sans-serif;margin:1.5em;color:#222}"
         "table{border-collapse:collapse;margin:0.5em 0 1em}"
         "th,td{border:1px solid #ccc;padding:2px 8px;text-align:right}"
         "th{background:#f2f4f8}.counters th{text-align:left}"
         "h2{font-size:1.1em;margin-top:1.5em}.note{color:#666;font-size:0.85em}"
         ".spark{vertical-align:middle;background:#fafbfd;border:1px solid #e2e6ee}</style>\n"
         "</head><body>\n";
}

std::string SvgLine(std::span<const double> values, std::string_view note, int decimals,
                    std::span<const double> marks) {
  constexpr int kWidth = 240, kHeight = 40;
  double top = 0;
  for (double v : values) top = std::max(top, v);
  const double scale = top > 0 ? top : 1;
  std::string points;
  for (size_t i = 0; i < values.size(); ++i) {
    const double x =
        values.size() < 2 ? 0 : static_cast<double>(i) * kWidth / static_cast<double>(values.size() - 1);
    const double y = kHeight - 2 - values[i] * (kHeight - 4) / scale;
    points += FormatDouble(x, 1) + "," + FormatDouble(y, 1) + " ";
  }
  std::string lines;
  for (double mark : marks) {
    const std::string x = FormatDouble(std::clamp(mark, 0.0, 1.0) * kWidth, 1);
    lines += "<line x1=\"" + x + "\" x2=\"" + x + "\" y1=\"0\" y2=\"" + std::to_string(kHeight) +
             "\" stroke=\"#d33\" stroke-width=\"1\"/>";
  }
  return "<svg class=\"spark\" width=\"" + std::to_string(kWidth) + "\" height=\"" +
         std::to_string(kHeight) + "\" viewBox=\"0 0 " + std::to_string(kWidth) + " " +
         std::to_string(kHeight) + "\">" + lines +
         "<polyline fill=\"none\" stroke=\"#2a6fdb\" stroke-width=\"1.5\" points=\"" + points +
         "\"/></svg> <span class=\"note\">" + HtmlEscape(note) + " (max " +
         FormatDouble(top, decimals) + ")</span>";
}

std::string UtcTime(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

bool RejectUnlessGet(const BuiltinRequest& request, BuiltinReply* reply) {
  if (request.method == "GET" || request.method == "HEAD" || request.method.empty()) return false;
  reply->status = 405;
  reply->headers.emplace_back("Allow", "GET, HEAD");
  reply->body = request.path + " is read-only: use GET\n";
  return true;
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}

JsonWriter& JsonWriter::Open(char bracket) {
  BeforeValue();
  out_ += bracket;
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::Close(char bracket) {
  out_ += bracket;
  first_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  String(key);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view value) {
  BeforeValue();
  util::AppendJsonString(&out_, value);
  return *this;
}

JsonWriter& JsonWriter::Number(uint64_t value) {
  BeforeValue();
  out_ += std::to_string(value);
  return *this;
}

JsonWriter& JsonWriter::Number(int64_t value) {
  BeforeValue();
  out_ += std::to_string(value);
  return *this;
}

JsonWriter& JsonWriter::Number(double value) {
  BeforeValue();
  out_ += FormatDouble(value, 3);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  BeforeValue();
  out_ += value ? "true" : "false";
  return *this;
}

}  // namespace arenarpc::builtin
