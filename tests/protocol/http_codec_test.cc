// The pieces of the HTTP protocol around the request decoder: recognising a connection's
// protocol, encoding responses, the error-code mapping and the JSON <-> wire conversion.
#include <google/protobuf/api.pb.h>
#include <gtest/gtest.h>

#include "arenarpc/error_codes.h"
#include "protocol/http/http_response.h"
#include "protocol/http/json_message.h"
#include "protocol/wire_protocol.h"

namespace arenarpc::protocol {
namespace {

TEST(WireProtocolTest, RecognisesBaiduStdAndHttpFromTheirFirstBytes) {
  EXPECT_EQ(WireProtocol::kBaiduStd, RecognizeProtocol("PRPC\0\0\0\1"));
  EXPECT_EQ(WireProtocol::kHttp, RecognizeProtocol("GET / HTTP/1.1"));
  EXPECT_EQ(WireProtocol::kHttp, RecognizeProtocol("POST /a/b"));
  EXPECT_EQ(WireProtocol::kHttp, RecognizeProtocol("OPTIONS * HTTP/1.1"));
  EXPECT_EQ(WireProtocol::kNeedMore, RecognizeProtocol(""));
  EXPECT_EQ(WireProtocol::kNeedMore, RecognizeProtocol("PR"));
  EXPECT_EQ(WireProtocol::kNeedMore, RecognizeProtocol("P"));   // PRPC, POST, PUT, PATCH
  EXPECT_EQ(WireProtocol::kNeedMore, RecognizeProtocol("POST"));
  EXPECT_EQ(WireProtocol::kUnknown, RecognizeProtocol("GETX"));
  EXPECT_EQ(WireProtocol::kUnknown, RecognizeProtocol("get / HTTP/1.1"));
  EXPECT_EQ(WireProtocol::kUnknown, RecognizeProtocol("\x16\x03\x01"));  // TLS
  EXPECT_EQ(WireProtocol::kUnknown, RecognizeProtocol("PRPX"));
  net::BufferChain chain;
  chain.Append("DEL");
  EXPECT_EQ(WireProtocol::kNeedMore, RecognizeProtocol(chain));
  chain.Append("ETE /x");
  EXPECT_EQ(WireProtocol::kHttp, RecognizeProtocol(chain));
}

TEST(HttpResponseTest, EncodesStatusHeadersAndBody) {
  HttpResponseHead head;
  head.status = 404;
  head.headers.emplace_back("x-bd-error-code", "1002");
  net::BufferChain out;
  EncodeHttpResponse(head, "nope\n", &out);
  EXPECT_EQ(
      "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n"
      "Content-Length: 5\r\nx-bd-error-code: 1002\r\n\r\nnope\n",
      out.ToString());
}

TEST(HttpResponseTest, ConnectionHeaderFollowsVersionAndKeepAlive) {
  HttpResponseHead head;
  head.keep_alive = false;
  net::BufferChain closing;
  EncodeHttpResponse(head, "", &closing);
  EXPECT_NE(std::string::npos, closing.ToString().find("Connection: close\r\n"));
  head.keep_alive = true;
  head.version_minor = 0;
  net::BufferChain kept10;
  EncodeHttpResponse(head, "", &kept10);
  EXPECT_EQ(0u, kept10.ToString().find("HTTP/1.0 200 OK\r\n"));
  EXPECT_NE(std::string::npos, kept10.ToString().find("Connection: keep-alive\r\n"));
}

TEST(HttpResponseTest, ErrorCodesMapAsBrpcDoes) {
  EXPECT_EQ(404, HttpStatusForError(ENOSERVICE));
  EXPECT_EQ(404, HttpStatusForError(ENOMETHOD));
  EXPECT_EQ(400, HttpStatusForError(EREQUEST));
  EXPECT_EQ(403, HttpStatusForError(ERPCAUTH));
  EXPECT_EQ(503, HttpStatusForError(ELIMIT));
  EXPECT_EQ(503, HttpStatusForError(EOVERCROWDED));
  EXPECT_EQ(503, HttpStatusForError(ELOGOFF));
  EXPECT_EQ(504, HttpStatusForError(ERPCTIMEDOUT));
  EXPECT_EQ(500, HttpStatusForError(EINTERNAL));
  EXPECT_EQ(500, HttpStatusForError(12345));
  EXPECT_EQ("x  y", HttpHeaderValue("x\r\ny"));
}

TEST(JsonMessageTest, JsonToWireAndBack) {
  google::protobuf::Api prototype;
  std::string wire, error;
  ASSERT_TRUE(JsonToWire(prototype, R"({"name":"svc","version":"v2","methods":[{"name":"M"}]})",
                         &wire, &error))
      << error;
  google::protobuf::Api parsed;
  ASSERT_TRUE(parsed.ParseFromString(wire));
  EXPECT_EQ("svc", parsed.name());
  EXPECT_EQ("v2", parsed.version());
  ASSERT_EQ(1, parsed.methods_size());
  EXPECT_EQ("M", parsed.methods(0).name());

  std::string json;
  ASSERT_TRUE(MessageToJson(parsed, &json, &error)) << error;
  EXPECT_EQ(R"({"name":"svc","methods":[{"name":"M"}],"version":"v2"})", json);
}

TEST(JsonMessageTest, BadJsonSaysWhy) {
  google::protobuf::Api prototype;
  std::string wire, error;
  EXPECT_FALSE(JsonToWire(prototype, R"({"nosuchfield":1})", &wire, &error));
  EXPECT_NE(std::string::npos, error.find("google.protobuf.Api")) << error;
  error.clear();
  EXPECT_FALSE(JsonToWire(prototype, "{not json", &wire, &error));
  EXPECT_FALSE(error.empty());
  error.clear();
  EXPECT_FALSE(JsonToWire(prototype, R"({"name":5})", &wire, &error));
  EXPECT_FALSE(error.empty());
}

}  // namespace
}  // namespace arenarpc::protocol
