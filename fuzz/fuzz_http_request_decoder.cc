// Fuzzes the server's HTTP request path below the sockets: protocol recognition, the request
// decoder (http-parser, limits, pipelining, 100-continue) over input arriving in arbitrary pieces,
// the query parsing of every request it accepts, and its body as the workload's EchoRequest in
// JSON (what a call's body goes through), printed back and re-read to the same wire bytes.
// Input: byte 0 chooses how the rest is chopped into reads; the rest is the connection's bytes.
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "echo/echo_payload.pb.h"
#include "fuzz_check.h"
#include "protocol/http/http_request_decoder.h"
#include "protocol/http/json_message.h"
#include "protocol/wire_protocol.h"

namespace {

using arenarpc::net::BufferChain;
using namespace arenarpc::protocol;

constexpr size_t kMaxHeader = 4096;
constexpr size_t kMaxBody = 16384;

void CheckRequest(const HttpRequest& request) {
  FUZZ_CHECK(!request.method.empty());
  FUZZ_CHECK(request.body.size() <= kMaxBody);
  FUZZ_CHECK(request.target.size() <= kMaxHeader);
  FUZZ_CHECK(request.path.size() <= request.target.size() || request.path == "/");
  for (const auto& [name, value] : request.headers) {
    FUZZ_CHECK(name.size() + value.size() <= kMaxHeader);
    for (char c : name) FUZZ_CHECK(!(c >= 'A' && c <= 'Z'));
  }
  for (const auto& [key, value] : ParseQuery(request.query)) {
    FUZZ_CHECK(key.size() + value.size() <= request.query.size());
  }
  std::string wire, error;
  const arenarpc::example::EchoRequest prototype;
  if (!JsonToWire(prototype, request.body, &wire, &error)) {
    FUZZ_CHECK(!error.empty());
    return;
  }
  arenarpc::example::EchoRequest parsed;
  FUZZ_CHECK(parsed.ParseFromString(wire));
  std::string json, again;
  FUZZ_CHECK(MessageToJson(parsed, &json, &error));
  FUZZ_CHECK(JsonToWire(prototype, json, &again, &error));
  FUZZ_CHECK(again == parsed.SerializeAsString());
  // Against protobuf's own JSON: the same text for the same message, and where json_util accepts
  // the body too, the same message.
  google::protobuf::util::JsonPrintOptions print;
  print.preserve_proto_field_names = true;
  std::string reference;
  FUZZ_CHECK(google::protobuf::util::MessageToJsonString(parsed, &reference, print).ok());
  FUZZ_CHECK(reference == json);
  arenarpc::example::EchoRequest by_json_util;
  if (google::protobuf::util::JsonStringToMessage(request.body, &by_json_util).ok()) {
    FUZZ_CHECK(by_json_util.SerializeAsString() == parsed.SerializeAsString());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t unit = (data[0] & 0x3f) + 1;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  const WireProtocol wire = RecognizeProtocol(bytes.substr(0, 24));
  // baidu_std: a request frame ("PRPC") or a streaming frame ("STRM").
  if (wire == WireProtocol::kBaiduStd) {
    FUZZ_CHECK(bytes.substr(0, 4) == "PRPC" || bytes.substr(0, 4) == "STRM");
  }
  if (wire == WireProtocol::kHttp2) FUZZ_CHECK(bytes.substr(0, 4) == "PRI ");
  if (wire == WireProtocol::kTls) FUZZ_CHECK(bytes[0] == 0x16 && bytes[1] == 3);

  HttpRequestDecoder decoder(kMaxHeader, kMaxBody);
  BufferChain in;
  HttpRequest request;
  size_t pos = 0, round = 0;
  bool failed = false;
  while (pos < bytes.size() && !failed) {
    const size_t n = std::min(bytes.size() - pos, unit * (round++ % 4 + 1));
    in.Append(bytes.substr(pos, n));
    pos += n;
    for (;;) {
      const size_t before = in.size();
      const HttpRequestDecoder::Status status = decoder.Next(in, &request);
      if (status == HttpRequestDecoder::Status::kNeedMore) {
        FUZZ_CHECK(in.size() <= before);  // taken bytes are cut off; none appear
        break;
      }
      if (status == HttpRequestDecoder::Status::kError) {
        const int code = decoder.error_status();
        FUZZ_CHECK(code == 400 || code == 413 || code == 417 || code == 431 || code == 501);
        FUZZ_CHECK(!decoder.error().empty());
        FUZZ_CHECK(decoder.Next(in, &request) == HttpRequestDecoder::Status::kError);
        failed = true;
        break;
      }
      if (status == HttpRequestDecoder::Status::kRequest) {
        FUZZ_CHECK(in.size() < before);
        CheckRequest(request);
        if (!request.keep_alive) {
          failed = true;  // the server reads nothing more on this connection
          break;
        }
      }
    }
  }
  return 0;
}
