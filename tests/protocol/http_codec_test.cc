// The pieces of the HTTP protocol around the request decoder: recognising a connection's
// protocol, encoding responses, the error-code mapping and the JSON <-> wire conversion.
#include <google/protobuf/api.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "arenarpc/error_codes.h"
#include "protocol/http/http_response.h"
#include "protocol/http/json_message.h"
#include "protocol/rpc_meta.pb.h"
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
  EXPECT_EQ(WireProtocol::kNeedMore, RecognizeProtocol("P"));  // PRPC, POST, PUT, PATCH
  EXPECT_EQ(WireProtocol::kNeedMore, RecognizeProtocol("POST"));
  EXPECT_EQ(WireProtocol::kUnknown, RecognizeProtocol("GETX"));
  EXPECT_EQ(WireProtocol::kUnknown, RecognizeProtocol("get / HTTP/1.1"));
  // A TLS handshake record (a ClientHello): type 22, version 3.0 .. 3.4.
  EXPECT_EQ(WireProtocol::kTls, RecognizeProtocol("\x16\x03\x01"));
  EXPECT_EQ(WireProtocol::kTls, RecognizeProtocol("\x16\x03\x03\x02\x00"));
  EXPECT_EQ(WireProtocol::kNeedMore, RecognizeProtocol("\x16"));
  EXPECT_EQ(WireProtocol::kNeedMore, RecognizeProtocol("\x16\x03"));
  EXPECT_EQ(WireProtocol::kUnknown, RecognizeProtocol("\x16\x02\x01"));
  EXPECT_EQ(WireProtocol::kUnknown, RecognizeProtocol("\x16\x03\x09"));
  EXPECT_EQ(WireProtocol::kUnknown, RecognizeProtocol("\x17\x03\x03"));  // not a handshake
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

RpcMeta FullMeta() {
  RpcMeta meta;
  meta.mutable_request()->set_service_name("svc \"quoted\" \\ \n\x01 caf\xc3\xa9");
  meta.mutable_request()->set_method_name("M");
  meta.mutable_request()->set_log_id(-9007199254740993LL);
  meta.mutable_request()->set_timeout_ms(-5);
  meta.set_correlation_id(1LL << 62);
  meta.set_authentication_data(
      std::string("\0\xff\x10"
                  "bytes",
                  8));
  meta.set_content_type(CONTENT_TYPE_PROTO_TEXT);
  meta.set_checksum_with_attachment(true);
  (*meta.mutable_user_fields())["k"] = "v";
  meta.mutable_stream_settings()->set_stream_id(7);
  meta.mutable_stream_settings()->add_extra_stream_ids(1);
  meta.mutable_stream_settings()->add_extra_stream_ids(-2);
  return meta;
}

// The reflection converter prints what protobuf's own printer prints, and reads it back.
TEST(JsonMessageTest, ReflectionConverterMatchesProtobufsJson) {
  const RpcMeta meta = FullMeta();
  std::string ours, error;
  ASSERT_TRUE(MessageToJson(meta, &ours, &error)) << error;
  std::string reference;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(meta, &reference, options).ok());
  EXPECT_EQ(reference, ours);

  std::string wire;
  ASSERT_TRUE(JsonToWire(RpcMeta(), ours, &wire, &error)) << error;
  RpcMeta back;
  ASSERT_TRUE(back.ParseFromString(wire));
  EXPECT_EQ(meta.SerializeAsString(), back.SerializeAsString());
  // JSON (lowerCamelCase) names, enums and 64-bit integers as numbers, null, escapes.
  wire.clear();
  ASSERT_TRUE(
      JsonToWire(RpcMeta(),
                 R"( { "correlationId" : 12 , "contentType": 1, "request": {"serviceName":)"
                 R"("a\u00e9\ud83d\ude00","methodName":"m","logId":"-3"},"userFields":{},)"
                 R"("checksumType":null, "streamSettings":{"streamId":1,"extraStreamIds":[]}})",
                 &wire, &error))
      << error;
  ASSERT_TRUE(back.ParseFromString(wire));
  EXPECT_EQ(12, back.correlation_id());
  EXPECT_EQ(CONTENT_TYPE_JSON, back.content_type());
  EXPECT_EQ("a\xc3\xa9\xf0\x9f\x98\x80", back.request().service_name());
  EXPECT_EQ(-3, back.request().log_id());
  EXPECT_FALSE(back.has_checksum_type());
}

TEST(JsonMessageTest, ReflectionConverterRejectsBadInputWithAReason) {
  const char* bad[] = {
      R"({"correlation_id":"x"})",
      R"({"compress_type":3000000000})",
      R"({"compress_type":1.5})",
      R"({"content_type":"NOPE"})",
      R"({"authentication_data":"%%%"})",
      R"({"request":{"service_name":1}})",
      R"({"request":[]})",
      R"({"user_fields":{"k":1}})",
      R"({"checksum_with_attachment":"yes"})",
      R"({"request":{"service_name":"a","method_name":"b"})",
      R"({"nosuch":1})",
      R"({} trailing)",
      R"({"request":{"service_name":"\ud800"}})",
      R"({"request":)",
      R"({"request":{"service_name":"a", "method_name":"b", "log_id":1}, })",
  };
  for (const char* json : bad) {
    std::string wire, error;
    EXPECT_FALSE(JsonToWire(RpcMeta(), json, &wire, &error)) << json;
    EXPECT_NE(std::string::npos, error.find("arenarpc.protocol.RpcMeta")) << json << ": " << error;
  }
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += R"({"request":)";
  std::string wire, error;
  EXPECT_FALSE(JsonToWire(RpcMeta(), deep, &wire, &error));
  // Required fields of a nested message are checked.
  EXPECT_FALSE(JsonToWire(RpcMeta(), R"({"request":{"service_name":"a"}})", &wire, &error));
  EXPECT_NE(std::string::npos, error.find("method_name")) << error;
}

}  // namespace
}  // namespace arenarpc::protocol
