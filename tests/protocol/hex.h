#pragma once
// Hex helpers for byte-exact protocol tests.
#include <cctype>
#include <stdexcept>
#include <string>
#include <string_view>

namespace arenarpc::testing {

// "50 52 50 43 ..." (whitespace ignored) -> bytes.
inline std::string FromHex(std::string_view hex) {
  std::string out;
  int nibble = -1;
  for (char c : hex) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    int v = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10;
    if (v < 0 || v > 15) throw std::invalid_argument("FromHex: bad digit");
    if (nibble < 0) {
      nibble = v;
    } else {
      out += static_cast<char>(nibble << 4 | v);
      nibble = -1;
    }
  }
  if (nibble >= 0) throw std::invalid_argument("FromHex: odd digit count");
  return out;
}

inline std::string ToHex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out += ' ';
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

}  // namespace arenarpc::testing
