#pragma once
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, init/final XOR 0xFFFFFFFF), as baidu_std's
// checksum_type 1 uses it (spec §3.4). "123456789" -> 0xE3069283.

#include <cstddef>
#include <cstdint>
#include <span>

#include "arenarpc/buffer_chain.h"

namespace arenarpc::protocol {

// Continues a CRC: Crc32cExtend(Crc32cExtend(0, a), b) == CRC-32C of a followed by b.
uint32_t Crc32cExtend(uint32_t crc, std::span<const char> data) noexcept;
inline uint32_t Crc32c(std::span<const char> data) noexcept { return Crc32cExtend(0, data); }
uint32_t Crc32cExtend(uint32_t crc, const net::BufferChain& chain) noexcept;

// brpc stores the CRC masked (leveldb-style) so that CRCs of data containing CRCs stay strong.
inline constexpr uint32_t kCrcMaskDelta = 0xA282EAD8u;
constexpr uint32_t MaskCrc32c(uint32_t crc) noexcept {
  return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta;
}
constexpr uint32_t UnmaskCrc32c(uint32_t masked) noexcept {
  const uint32_t r = masked - kCrcMaskDelta;
  return (r >> 17) | (r << 15);
}

}  // namespace arenarpc::protocol
