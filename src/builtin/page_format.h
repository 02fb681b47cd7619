#pragma once
// Text helpers of the built-in pages: HTML escaping, a small JSON writer, number formatting.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "builtin/builtin_service.h"

namespace arenarpc::builtin {

std::string HtmlEscape(std::string_view text);
// Fixed-point with `decimals` digits ("12.500").
std::string FormatDouble(double value, int decimals = 3);
// "2026-11-28 22:51:01 UTC", or "-" for a time <= 0.
std::string UtcTime(int64_t unix_ms);
// True when the request asks for JSON (?format=json).
bool WantsJson(const BuiltinRequest& request);
// True when the request asks for HTML (?format=html, or a browser's Accept: text/html).
bool WantsHtml(const BuiltinRequest& request);
// The start of an HTML page (doctype, title, the pages' shared style) up to the open <body>.
std::string HtmlHead(std::string_view title);
// An inline SVG line of `values` (oldest first) scaled to their maximum, then `note` and the
// maximum ("calls/s, last 60 s (max 12)"). Each of `marks` (0 = the left edge, 1 = the right)
// draws a vertical red line across the chart (e.g. when auto decided).
std::string SvgLine(std::span<const double> values, std::string_view note, int decimals = 0,
                    std::span<const double> marks = {});
// A GET-only page answers other methods with 405.
bool RejectUnlessGet(const BuiltinRequest& request, BuiltinReply* reply);

// Writes one JSON value; the caller nests objects and arrays correctly.
class JsonWriter {
 public:
  JsonWriter& BeginObject() { return Open('{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Number(uint64_t value);
  JsonWriter& Number(int64_t value);
  JsonWriter& Number(int value) { return Number(static_cast<int64_t>(value)); }
  JsonWriter& Number(double value);
  JsonWriter& Bool(bool value);
  // Key + value in one.
  template <typename T>
  JsonWriter& Field(std::string_view key, T value) {
    Key(key);
    if constexpr (std::is_convertible_v<T, std::string_view>) {
      return String(value);
    } else if constexpr (std::is_same_v<T, bool>) {
      return Bool(value);
    } else if constexpr (std::is_floating_point_v<T>) {
      return Number(static_cast<double>(value));
    } else if constexpr (std::is_signed_v<T>) {
      return Number(static_cast<int64_t>(value));
    } else {
      return Number(static_cast<uint64_t>(value));
    }
  }
  std::string Take() { return std::move(out_); }

 private:
  JsonWriter& Open(char bracket);
  JsonWriter& Close(char bracket);
  void BeforeValue();
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace arenarpc::builtin
