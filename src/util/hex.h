#pragma once
// Fixed-width lower-case hex of an integer (trace and span ids on the wire, the pages, OTLP).

#include <cstdint>
#include <string>

namespace arenarpc::util {

// Appends the low `digits` hex digits of `value`, zero-padded.
inline void AppendHex(std::string* out, uint64_t value, int digits) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) {
    out->push_back(kDigits[(value >> shift) & 0xf]);
  }
}

inline std::string Hex(uint64_t value, int digits = 16) {
  std::string out;
  out.reserve(static_cast<size_t>(digits));
  AppendHex(&out, value, digits);
  return out;
}

}  // namespace arenarpc::util
