// Fuzzes the browser paths' body decoding below the sockets: grpc-web-text's base64 (chunks with
// their own padding), then the grpc-web envelope of the decoded (or raw) body. Properties: a
// decoded text re-encodes (padded) to a text that decodes to the same bytes; an unframed message
// lies inside the body, after its 5-byte envelope, and frames back to the same body.
// Input: byte 0 bit 0 chooses whether the rest is base64 text or a raw body; bit 1, that the rest
// is a Connect GET's query instead (property: parsed, its message is no longer than the query;
// refused, with a reason).
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "protocol/http/connect_wire.h"
#include "protocol/http/grpc_web_wire.h"
#include "util/base64.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool text = (data[0] & 1) != 0;
  std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  if ((data[0] & 2) != 0) {
    arenarpc::protocol::ConnectGetQuery query;
    std::string error;
    if (arenarpc::protocol::ParseConnectGetQuery(body, &query, &error)) {
      FUZZ_CHECK(query.message.size() <= body.size());
    } else {
      FUZZ_CHECK(!error.empty());
    }
    return 0;
  }
  if (text) {
    size_t error_offset = 0;
    std::string decoded = body;
    if (!arenarpc::util::DecodeBase64InPlace(&decoded, &error_offset)) {
      FUZZ_CHECK(error_offset <= body.size());
      return 0;
    }
    FUZZ_CHECK(decoded.size() <= body.size());
    std::string again = arenarpc::util::EncodeBase64(decoded, /*pad=*/true);
    FUZZ_CHECK(arenarpc::util::DecodeBase64InPlace(&again, &error_offset));
    FUZZ_CHECK(again == decoded);
    body = std::move(decoded);
  }
  std::string_view message;
  bool compressed = false;
  std::string error;
  if (!arenarpc::protocol::UnframeGrpcWebRequest(body, &message, &compressed, &error)) {
    FUZZ_CHECK(!error.empty());
    return 0;
  }
  FUZZ_CHECK(message.data() >= body.data() + 5);
  FUZZ_CHECK(message.data() + message.size() <= body.data() + body.size());
  std::string framed;
  arenarpc::protocol::AppendGrpcWebMessage(message, compressed, &framed);
  FUZZ_CHECK(framed == body);
  return 0;
}
