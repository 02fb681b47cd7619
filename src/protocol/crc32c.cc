#include "protocol/crc32c.h"

#include <array>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace arenarpc::protocol {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = MakeTable();

// Works on the inverted register value.
uint32_t SoftwareUpdate(uint32_t c, const unsigned char* p, size_t n) noexcept {
  for (size_t i = 0; i < n; ++i) c = kTable[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t HardwareUpdate(uint32_t c, const unsigned char* p,
                                                          size_t n) noexcept {
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t word;
    __builtin_memcpy(&word, p, 8);
    c64 = _mm_crc32_u64(c64, word);
    p += 8;
    n -= 8;
  }
  c = static_cast<uint32_t>(c64);
  while (n > 0) {
    c = _mm_crc32_u8(c, *p++);
    --n;
  }
  return c;
}
const bool kHaveSse42 = [] {
  __builtin_cpu_init();  // required before use in static initialization
  return __builtin_cpu_supports("sse4.2") != 0;
}();
#endif

uint32_t Update(uint32_t c, const unsigned char* p, size_t n) noexcept {
#if defined(__x86_64__)
  if (kHaveSse42) return HardwareUpdate(c, p, n);
#endif
  return SoftwareUpdate(c, p, n);
}

}  // namespace

uint32_t Crc32cExtend(uint32_t crc, std::span<const char> data) noexcept {
  return ~Update(~crc, reinterpret_cast<const unsigned char*>(data.data()), data.size());
}

uint32_t Crc32cExtend(uint32_t crc, const net::BufferChain& chain) noexcept {
  uint32_t c = ~crc;
  for (size_t i = 0; i < chain.span_count(); ++i) {
    const std::span<const char> s = chain.span(i);
    c = Update(c, reinterpret_cast<const unsigned char*>(s.data()), s.size());
  }
  return ~c;
}

}  // namespace arenarpc::protocol
