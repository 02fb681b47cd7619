#pragma once
// The worked examples of docs/protocol.md §10, byte for byte.
#include <string>

#include "hex.h"

namespace arenarpc::testing {

inline constexpr long long kSpecCorrelationId = 4294967298LL;  // 0x0000000100000002

// §10.1 request as brpc >= 1.14 sends it (62 bytes).
inline std::string SpecRequestFull() {
  return FromHex(
      "50 52 50 43 00 00 00 32 00 00 00 2b 0a 1b 0a 13"
      "65 78 61 6d 70 6c 65 2e 45 63 68 6f 53 65 72 76"
      "69 63 65 12 04 45 63 68 6f 18 00 20 82 80 80 80"
      "10 50 00 58 00 62 00 0a 05 68 65 6c 6c 6f");
}
// §10.1 minimal equivalent (54 bytes).
inline std::string SpecRequestMinimal() {
  return FromHex(
      "50 52 50 43 00 00 00 2a 00 00 00 23 0a 1b 0a 13"
      "65 78 61 6d 70 6c 65 2e 45 63 68 6f 53 65 72 76"
      "69 63 65 12 04 45 63 68 6f 20 82 80 80 80 10 0a"
      "05 68 65 6c 6c 6f");
}
// §10.1 with log_id 5 and attachment "AB" (meta_size 47, body_size 56).
inline std::string SpecRequestLogIdAttachment() {
  return FromHex(
      "50 52 50 43 00 00 00 38 00 00 00 2f 0a 1d 0a 13"
      "65 78 61 6d 70 6c 65 2e 45 63 68 6f 53 65 72 76"
      "69 63 65 12 04 45 63 68 6f 18 05 18 00 20 82 80"
      "80 80 10 28 02 50 00 58 00 62 00 0a 05 68 65 6c"
      "6c 6f 41 42");
}
// §10.2 successful reply (37 bytes) and its minimal form (29 bytes).
inline std::string SpecReplyFull() {
  return FromHex(
      "50 52 50 43 00 00 00 19 00 00 00 12 12 02 08 00"
      "18 00 20 82 80 80 80 10 50 00 58 00 62 00 0a 05"
      "68 65 6c 6c 6f");
}
inline std::string SpecReplyMinimal() {
  return FromHex(
      "50 52 50 43 00 00 00 11 00 00 00 0a 12 02 08 00 20 82 80 80 80 10"
      "0a 05 68 65 6c 6c 6f");
}
// §10.3 error reply, method "Foo" unknown, server identity [127.0.0.1:8000] (99 bytes).
inline std::string SpecErrorReply() {
  return FromHex(
      "50 52 50 43 00 00 00 57 00 00 00 57 12 47 08 ea"
      "07 12 42 5b 31 32 37 2e 30 2e 30 2e 31 3a 38 30"
      "30 30 5d 5b 45 31 30 30 32 5d 46 61 69 6c 20 74"
      "6f 20 66 69 6e 64 20 6d 65 74 68 6f 64 3d 65 78"
      "61 6d 70 6c 65 2e 45 63 68 6f 53 65 72 76 69 63"
      "65 2f 46 6f 6f 18 00 20 82 80 80 80 10 50 00 58"
      "00 62 00");
}
inline std::string SpecPayload() { return FromHex("0a 05 68 65 6c 6c 6f"); }

}  // namespace arenarpc::testing
