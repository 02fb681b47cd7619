// MurmurHash3, x86 32-bit variant (Austin Appleby's public-domain algorithm).
#include <cstring>

#include "arenarpc/cluster/hash.h"

namespace arenarpc {
namespace {

constexpr uint32_t Rotl(uint32_t x, int r) noexcept { return (x << r) | (x >> (32 - r)); }

constexpr uint32_t FinalMix(uint32_t h) noexcept {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

}  // namespace

uint32_t MurmurHash32(std::string_view data, uint32_t seed) noexcept {
  constexpr uint32_t c1 = 0xcc9e2d51u, c2 = 0x1b873593u;
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  const size_t blocks = data.size() / 4;
  uint32_t h = seed;
  for (size_t i = 0; i < blocks; ++i) {
    uint32_t k;
    std::memcpy(&k, bytes + i * 4, 4);  // little-endian hosts, as the reference implementation
    k *= c1;
    k = Rotl(k, 15);
    k *= c2;
    h ^= k;
    h = Rotl(h, 13);
    h = h * 5 + 0xe6546b64u;
  }
  const unsigned char* tail = bytes + blocks * 4;
  uint32_t k = 0;
  switch (data.size() & 3) {
    case 3: k ^= static_cast<uint32_t>(tail[2]) << 16; [[fallthrough]];
    case 2: k ^= static_cast<uint32_t>(tail[1]) << 8; [[fallthrough]];
    case 1:
      k ^= tail[0];
      k *= c1;
      k = Rotl(k, 15);
      k *= c2;
      h ^= k;
  }
  h ^= static_cast<uint32_t>(data.size());
  return FinalMix(h);
}

}  // namespace arenarpc
