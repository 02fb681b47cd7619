#include "protocol/h2/grpc_wire.h"

#include <cerrno>
#include <limits>

#include "arenarpc/error_codes.h"
#include "util/base64.h"

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

GrpcStatus GrpcStatusForError(int error_code, std::string_view text, std::string* grpc_text) {
  if (error_code == ENOMETHOD || error_code == ENOSERVICE) {
    const size_t equals = text.find('=');
    const std::string_view path = equals == std::string_view::npos ? text : text.substr(equals + 1);
    *grpc_text = "Method not found: " + std::string(path);
    return GrpcStatus::kUnimplemented;
  }
  *grpc_text = text;
  return GrpcStatusForError(error_code);
}

int ErrorCodeForGrpcStatus(int grpc_status) noexcept {
  switch (grpc_status) {
    case 0: return 0;
    case 1: return ECANCELED;                  // CANCELLED
    case 3: return EINVAL;                     // INVALID_ARGUMENT
    case 4: return ERPCTIMEDOUT;               // DEADLINE_EXCEEDED
    case 6: return EEXIST;                     // ALREADY_EXISTS
    case 7: return EPERM;                      // PERMISSION_DENIED
    case 8: return ELIMIT;                     // RESOURCE_EXHAUSTED
    case 12: return ENOMETHOD;                 // UNIMPLEMENTED
    case 16: return ERPCAUTH;                  // UNAUTHENTICATED
    default: return EINTERNAL;                 // UNKNOWN, NOT_FOUND, UNAVAILABLE, INTERNAL, ...
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

std::string EncodeBinaryHeader(std::string_view bytes) {
  return util::EncodeBase64(bytes, /*pad=*/false);
}

bool DecodeBinaryHeader(std::string_view value, std::string* bytes) {
  bytes->assign(value);
  while (bytes->size() % 4 != 0) *bytes += '=';
  size_t bad_at = 0;
  if (util::DecodeBase64InPlace(bytes, &bad_at)) return true;
  bytes->clear();
  return false;
}

std::string PercentDecode(std::string_view text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
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

namespace arenarpc::protocol::h2 {

uint32_t DecodeMessageLength(const net::BufferChain& body) noexcept {
  unsigned char prefix[kMessagePrefixSize];
  body.CopyTo(prefix, sizeof(prefix));
  return (uint32_t{prefix[1]} << 24) | (uint32_t{prefix[2]} << 16) | (uint32_t{prefix[3]} << 8) |
         uint32_t{prefix[4]};
}

bool IsReservedHeader(std::string_view name) noexcept {
  return name.empty() || name[0] == ':' || name.substr(0, 5) == "grpc-" || name == "te" ||
         name == "content-type" || name == "user-agent" || name == "content-length";
}

}  // namespace arenarpc::protocol::h2
