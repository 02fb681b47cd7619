#pragma once
// How a payload is encoded (spec §3): the RpcMeta fields a receiver needs to open it, copied out
// of the meta so that a call does not keep (or move away) the protocol's decoded RpcMeta.

#include <algorithm>
#include <array>
#include <cstddef>
#include <string_view>

#include "protocol/rpc_meta.pb.h"

namespace arenarpc::protocol {

struct PayloadEncoding {
  int content_type = CONTENT_TYPE_PB;
  int compress_type = COMPRESS_TYPE_NONE;
  int checksum_type = CHECKSUM_TYPE_NONE;
  bool checksum_with_attachment = false;
  static constexpr size_t kMaxChecksumBytes = 8;
  // The value as sent when it has at most kMaxChecksumBytes (CRC-32C's are 4), else empty: a
  // larger one cannot verify, and only its size goes into the error text. Held in place, so that
  // an encoding is copied and reset without a string operation (every call moves one twice).
  std::array<char, kMaxChecksumBytes> checksum_bytes{};
  size_t checksum_value_size = 0;

  std::string_view checksum_value() const noexcept {
    return checksum_value_size <= kMaxChecksumBytes
               ? std::string_view(checksum_bytes.data(), checksum_value_size)
               : std::string_view();
  }

  static PayloadEncoding Of(const RpcMeta& meta) {
    PayloadEncoding e;
    e.content_type = meta.content_type();
    e.compress_type = meta.compress_type();
    e.checksum_type = meta.checksum_type();
    e.checksum_with_attachment = meta.checksum_with_attachment();
    e.checksum_value_size = meta.checksum_value().size();
    if (e.checksum_value_size <= kMaxChecksumBytes) {
      std::copy_n(meta.checksum_value().data(), e.checksum_value_size, e.checksum_bytes.data());
    }
    return e;
  }
  static PayloadEncoding Compressed(int compress_type) {
    PayloadEncoding e;
    e.compress_type = compress_type;
    return e;
  }
};

}  // namespace arenarpc::protocol
