#include "util/json_string.h"

namespace arenarpc::util {
namespace {

void AppendEscaped(std::string* out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        if (byte < 0x20) {
          *out += "\\u00";
          *out += kHex[byte >> 4];
          *out += kHex[byte & 15];
        } else {
          *out += c;
        }
    }
  }
}

}  // namespace

void AppendJsonString(std::string* out, std::string_view text) {
  *out += '"';
  AppendEscaped(out, text);
  *out += '"';
}

std::string JsonEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  AppendEscaped(&out, text);
  return out;
}

}  // namespace arenarpc::util
