#include "protocol/checksum.h"

#include "protocol/crc32c.h"

namespace arenarpc::protocol {
namespace {

std::string BigEndian32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

}  // namespace

const char* ChecksumTypeName(int checksum_type) noexcept {
  switch (checksum_type) {
    case CHECKSUM_TYPE_NONE:
      return "none";
    case CHECKSUM_TYPE_CRC32C:
      return "crc32c";
    default:
      return "unknown";
  }
}

std::string Crc32cChecksumValue(const net::BufferChain& payload,
                                const net::BufferChain* attachment) {
  uint32_t crc = Crc32cExtend(0, payload);
  if (attachment != nullptr) crc = Crc32cExtend(crc, *attachment);
  return BigEndian32(MaskCrc32c(crc));
}

bool SetChecksum(int checksum_type, bool with_attachment, const net::BufferChain& payload,
                 const net::BufferChain& attachment, RpcMeta* meta, std::string* error) {
  switch (checksum_type) {
    case CHECKSUM_TYPE_NONE:
      meta->set_checksum_type(CHECKSUM_TYPE_NONE);
      meta->set_checksum_value("");
      return true;
    case CHECKSUM_TYPE_CRC32C:
      meta->set_checksum_type(CHECKSUM_TYPE_CRC32C);
      meta->set_checksum_value(
          Crc32cChecksumValue(payload, with_attachment ? &attachment : nullptr));
      if (with_attachment) meta->set_checksum_with_attachment(true);
      return true;
    default:
      *error = "unsupported checksum_type=" + std::to_string(checksum_type);
      return false;
  }
}

bool VerifyChecksum(const PayloadEncoding& encoding, const net::BufferChain& payload,
                    const net::BufferChain& attachment, std::string* error) {
  if (encoding.checksum_type != CHECKSUM_TYPE_CRC32C) return true;
  if (encoding.checksum_value_size != 4) {
    *error = "crc32c checksum_value has " + std::to_string(encoding.checksum_value_size) +
             " bytes, expected 4";
    return false;
  }
  const std::string expected =
      Crc32cChecksumValue(payload, encoding.checksum_with_attachment ? &attachment : nullptr);
  if (expected != encoding.checksum_value()) {
    *error = "crc32c checksum mismatch";
    return false;
  }
  return true;
}

}  // namespace arenarpc::protocol
