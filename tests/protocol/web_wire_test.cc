// The browsers' wire pieces (docs/http.md, "Browsers"): base64 as grpc-web-text sends it (chunks
// padded on their own), the grpc-web envelope checks, trailers frames, Connect's codes and JSON.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/http/connect_wire.h"
#include "protocol/http/grpc_web_wire.h"
#include "protocol/http/http_response.h"
#include "protocol/http/status_details.h"
#include "util/base64.h"

namespace arenarpc::protocol {
namespace {

std::string Decoded(std::string text, bool* ok, size_t* bad_at) {
  *ok = util::DecodeBase64InPlace(&text, bad_at);
  return text;
}

TEST(WebWireTest, Base64RoundTripsAndDecodesPaddedChunks) {
  for (const std::string& bytes : std::vector<std::string>{"", "a", "ab", "abc", "abcd",
                                                        std::string("\0\xff\x80", 3)}) {
    bool ok = false;
    size_t bad_at = 0;
    EXPECT_EQ(bytes, Decoded(util::EncodeBase64(bytes, true), &ok, &bad_at));
    EXPECT_TRUE(ok);
  }
  bool ok = false;
  size_t bad_at = 0;
  // Two chunks encoded apart: "YQ==" + "YmM=" is "a" + "bc".
  EXPECT_EQ("abc", Decoded("YQ==YmM=", &ok, &bad_at));
  EXPECT_TRUE(ok);
  EXPECT_EQ("YWI", util::EncodeBase64("ab", false));
}

TEST(WebWireTest, Base64GarbageIsRefusedWithItsOffset) {
  bool ok = true;
  size_t bad_at = 0;
  Decoded("YWJj!WJj", &ok, &bad_at);
  EXPECT_FALSE(ok);
  EXPECT_EQ(4u, bad_at);
  Decoded("YW=j", &ok, &bad_at);  // data after padding
  EXPECT_FALSE(ok);
  EXPECT_EQ(3u, bad_at);
  Decoded("=AAA", &ok, &bad_at);  // padding cannot start a quantum
  EXPECT_FALSE(ok);
  EXPECT_EQ(0u, bad_at);
  Decoded("YWJjZ", &ok, &bad_at);  // a truncated last quantum
  EXPECT_FALSE(ok);
  EXPECT_EQ(4u, bad_at);
}

TEST(WebWireTest, UnframeChecksTheEnvelope) {
  std::string body;
  AppendGrpcWebMessage("hello", /*compressed=*/false, &body);
  std::string_view message;
  bool compressed = true;
  std::string error;
  ASSERT_TRUE(UnframeGrpcWebRequest(body, &message, &compressed, &error)) << error;
  EXPECT_EQ("hello", message);
  EXPECT_FALSE(compressed);
  EXPECT_FALSE(UnframeGrpcWebRequest(body + "x", &message, &compressed, &error));
  EXPECT_NE(std::string::npos, error.find("says 5 bytes, the body has 6")) << error;
  EXPECT_FALSE(UnframeGrpcWebRequest(body.substr(0, 4), &message, &compressed, &error));
  std::string trailers;
  AppendGrpcWebTrailers(0, {}, {}, &trailers);
  EXPECT_FALSE(UnframeGrpcWebRequest(trailers, &message, &compressed, &error));
  EXPECT_NE(std::string::npos, error.find("flag 128")) << error;
}

TEST(WebWireTest, TrailersFrame) {
  std::string frame;
  AppendGrpcWebTrailers(7, "no 100%", {{"x-t", "v"}}, &frame);
  const std::string lines = "grpc-status:7\r\ngrpc-message:no 100%25\r\nx-t:v\r\n";
  ASSERT_EQ(5 + lines.size(), frame.size());
  EXPECT_EQ('\x80', frame[0]);
  EXPECT_EQ(static_cast<char>(lines.size()), frame[4]);
  EXPECT_EQ(lines, frame.substr(5));
}

TEST(WebWireTest, ConnectCodesStatusesAndJson) {
  EXPECT_EQ("unimplemented", ConnectCodeName(12));
  EXPECT_EQ(501, HttpStatusForConnectCode(12));
  EXPECT_EQ(429, HttpStatusForConnectCode(8));
  EXPECT_EQ(499, HttpStatusForConnectCode(1));
  EXPECT_EQ("unknown", ConnectCodeName(99));
  EXPECT_EQ(R"({"code":"not_found","message":"a \"b\""})", ConnectErrorJson(5, "a \"b\""));
  EXPECT_EQ(R"({"code":"internal"})", ConnectErrorJson(13, ""));
  EXPECT_EQ("{}", ConnectEndStreamJson(0, "", {}));
  EXPECT_EQ(R"({"metadata":{"k":["v"]}})", ConnectEndStreamJson(0, "", {{"k", "v"}}));
  EXPECT_EQ(R"({"error":{"code":"aborted","message":"m"},"metadata":{"k":["v"]}})",
            ConnectEndStreamJson(10, "m", {{"k", "v"}}));
}

// A handler's google.rpc.Status (grpc-status-details-bin) as Connect's "details": each Any's
// message name and its bytes in unpadded base64, in order; bytes that are not a Status (or one
// without details) leave the key out and the error as it was.
TEST(WebWireTest, ConnectErrorDetailsFromTheStatus) {
  const auto field = [](int number, std::string_view bytes) {  // a length-delimited field
    return std::string(1, static_cast<char>(number << 3 | 2)) +
           std::string(1, static_cast<char>(bytes.size())) + std::string(bytes);
  };
  const std::string retry = field(1, "type.googleapis.com/google.rpc.RetryInfo") +
                            field(2, std::string("\x0a\x02\x08\x05", 4));
  const std::string debug = field(1, "type.googleapis.com/google.rpc.DebugInfo") +
                            field(2, std::string("\x12\x03\x00\xff\x80", 5));
  const std::string status = std::string("\x08\x07", 2) + field(2, "rich") + field(3, retry) +
                             field(3, debug);
  const std::string details =
      R"("details":[{"type":"google.rpc.RetryInfo","value":"CgIIBQ"},)"
      R"({"type":"google.rpc.DebugInfo","value":"EgMA/4A"}])";
  EXPECT_EQ(R"({"code":"permission_denied","message":"rich",)" + details + "}",
            ConnectErrorJson(7, "rich", status));
  EXPECT_EQ(R"({"error":{"code":"permission_denied",)" + details + "}}",
            ConnectEndStreamJson(7, "", {}, status));
  std::vector<StatusDetail> parsed;
  ASSERT_TRUE(ParseStatusDetails(status, &parsed));
  ASSERT_EQ(2u, parsed.size());
  EXPECT_EQ(std::string("\x12\x03\x00\xff\x80", 5), parsed[1].value);
  // Not a google.rpc.Status: a length past the end, a bad wire type; a Status without details.
  for (const std::string& bad : {field(3, retry).substr(0, 10), std::string("\x0f\x01", 2)}) {
    EXPECT_FALSE(ParseStatusDetails(bad, &parsed));
    EXPECT_TRUE(parsed.empty());
    EXPECT_EQ(R"({"code":"permission_denied","message":"m"})", ConnectErrorJson(7, "m", bad));
  }
  EXPECT_EQ(R"({"code":"internal"})", ConnectErrorJson(13, "", std::string("\x08\x0d", 2)));
}

TEST(WebWireTest, Chunks) {
  net::BufferChain out;
  AppendHttpChunk(std::string(26, 'z'), &out);
  AppendHttpChunk("", &out);  // nothing: an empty chunk would end the body
  out.Append(HttpLastChunk());
  EXPECT_EQ("1a\r\n" + std::string(26, 'z') + "\r\n0\r\n\r\n", out.ToString());
}

}  // namespace
}  // namespace arenarpc::protocol
