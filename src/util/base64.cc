#include "util/base64.h"

#include <array>
#include <cstdint>

namespace arenarpc::util {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Character -> 6-bit value; -1 not in the alphabet.
constexpr std::array<int8_t, 256> kValues = [] {
  std::array<int8_t, 256> values{};
  values.fill(-1);
  for (int i = 0; i < 64; ++i) values[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  return values;
}();

}  // namespace

std::string EncodeBase64(std::string_view bytes, bool pad) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (uint32_t{static_cast<unsigned char>(bytes[i])} << 16) |
                       (uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(v >> shift) & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t{static_cast<unsigned char>(bytes[i])} << 16;
    if (rest == 2) v |= uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    if (rest == 2) out += kAlphabet[(v >> 6) & 63];
    if (pad) out.append(rest == 1 ? 2 : 1, '=');
  }
  return out;
}

bool DecodeBase64InPlace(std::string* text, size_t* error_offset) {
  std::string& s = *text;
  size_t out = 0;
  for (size_t at = 0; at < s.size(); at += 4) {
    if (s.size() - at < 4) {
      *error_offset = at;
      return false;
    }
    int values[4];
    int padding = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s[at + k];
      if (c == '=' && k >= 2) {
        ++padding;
        values[k] = 0;
        continue;
      }
      values[k] = kValues[static_cast<unsigned char>(c)];
      if (values[k] < 0 || padding > 0) {  // not base64, or data after '='
        *error_offset = at + k;
        return false;
      }
    }
    const uint32_t v = (uint32_t(values[0]) << 18) | (uint32_t(values[1]) << 12) |
                       (uint32_t(values[2]) << 6) | uint32_t(values[3]);
    s[out++] = static_cast<char>(v >> 16);
    if (padding < 2) s[out++] = static_cast<char>(v >> 8);
    if (padding < 1) s[out++] = static_cast<char>(v);
  }
  s.resize(out);
  return true;
}

}  // namespace arenarpc::util
