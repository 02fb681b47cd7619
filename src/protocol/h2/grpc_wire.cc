#include "protocol/h2/grpc_wire.h"

#include <cerrno>
#include <limits>

#include "arenarpc/error_codes.h"

namespace arenarpc::protocol::h2 {

// brpc's ErrorCodeToGrpcStatus (src/brpc/grpc.cpp); every other code is INTERNAL there too.
GrpcStatus GrpcStatusForError(int error_code) noexcept {
  switch (error_code) {
    case 0:
      return GrpcStatus::kOk;
    case ENOSERVICE:
    case ENOMETHOD:
      return GrpcStatus::kUnimplemented;
    case ERPCAUTH:
      return GrpcStatus::kUnauthenticated;
    case EREQUEST:
    case EINVAL:
      return GrpcStatus::kInvalidArgument;
    case ELIMIT:
    case ELOGOFF:
      return GrpcStatus::kUnavailable;
    case EPERM:
      return GrpcStatus::kPermissionDenied;
    case ERPCTIMEDOUT:
    case ETIMEDOUT:
      return GrpcStatus::kDeadlineExceeded;
    default:
      return GrpcStatus::kInternal;
  }
}

int64_t ParseGrpcTimeoutMs(std::string_view value) noexcept {
  if (value.size() < 2 || value.size() > 9) return -1;
  int64_t amount = 0;
  for (char c : value.substr(0, value.size() - 1)) {
    if (c < '0' || c > '9') return -1;
    amount = amount * 10 + (c - '0');
  }
  int64_t ms = 0;
  switch (value.back()) {
    case 'H': ms = amount * 3600000; break;
    case 'M': ms = amount * 60000; break;
    case 'S': ms = amount * 1000; break;
    case 'm': ms = amount; break;
    case 'u': ms = (amount + 999) / 1000; break;
    case 'n': ms = (amount + 999999) / 1000000; break;
    default: return -1;
  }
  return std::min<int64_t>(ms, std::numeric_limits<int32_t>::max());
}

std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c >= 0x20 && c <= 0x7e && c != '%') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

void EncodeMessagePrefix(bool compressed, uint32_t length, char out[kMessagePrefixSize]) noexcept {
  out[0] = compressed ? 1 : 0;
  out[1] = static_cast<char>(length >> 24);
  out[2] = static_cast<char>(length >> 16);
  out[3] = static_cast<char>(length >> 8);
  out[4] = static_cast<char>(length);
}

}  // namespace arenarpc::protocol::h2
