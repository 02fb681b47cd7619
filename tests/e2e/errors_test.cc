// Error replies exactly as spec §5.3/§5.4 gives them: codes, texts, reply shape (no payload, no
// attachment), and the connection staying usable afterwards.

#include <chrono>
#include <string>
#include <string_view>
#include <thread>

#include "arenarpc/error_codes.h"
#include "protocol/compression.h"
#include "server_fixture.h"

namespace arenarpc::e2e {
namespace {

class ErrorsTest : public ServerTest {
 protected:
  // A failure reply: body_size == meta_size, no attachment_size.
  static void ExpectFailureShape(const RawReply& reply) {
    EXPECT_TRUE(reply.frame.payload.empty());
    EXPECT_TRUE(reply.frame.attachment.empty());
    EXPECT_FALSE(reply.frame.meta.has_attachment_size());
  }
  TestRequest request_ = [] {
    TestRequest r;
    r.set_message("m");
    return r;
  }();
};
ARENARPC_ALL_MODES(ErrorsTest);

// A compressed body that inflates past max_body_size keeps brpc's "Fail to parse" text and says
// why after it, instead of looking like bytes that do not parse.
TEST_P(ErrorsTest, BodyInflatingPastMaxBodySizeSaysSo) {
  ServerOptions options;
  options.max_body_size = 64 << 10;
  StartServer(options);
  RawClient client(port_);
  TestRequest big;
  big.set_message(std::string(1 << 20, 'z'));  // 1 MiB of one byte: gzip makes it ~1 KiB
  net::BufferChain plain, packed;
  plain.append(big.SerializeAsString());
  std::string error;
  ASSERT_TRUE(protocol::Compress(2, plain, &packed, &error)) << error;
  ASSERT_LT(packed.size(), size_t{64 << 10});
  RawRequest raw;
  raw.raw_payload = packed.to_string();
  raw.compress_type = 2;
  RawReply reply = client.Call(raw);
  EXPECT_EQ(EREQUEST, reply.error_code);
  EXPECT_NE(std::string::npos, reply.error_text.find("[E1003]Fail to parse request=")) << reply.error_text;
  EXPECT_NE(std::string::npos, reply.error_text.find("decompresses to more than 65536 bytes"))
      << reply.error_text;
  raw = RawRequest{};
  raw.message = &request_;
  EXPECT_EQ(0, client.Call(raw).error_code);
}

TEST_P(ErrorsTest, UnknownServiceAndMethod) {
  StartServer();
  RawClient client(port_);
  RawRequest raw = RequestFor(&request_);

  raw.service = "Nope";
  RawReply reply = client.Call(raw);
  EXPECT_EQ(ENOSERVICE, reply.error_code);
  EXPECT_EQ(Identity() + "[E1001]Fail to find service=Nope", reply.error_text);
  ExpectFailureShape(reply);

  raw.service = "arenarpc.e2e.TestService";
  raw.method = "Foo";
  reply = client.Call(raw);
  EXPECT_EQ(ENOMETHOD, reply.error_code);
  EXPECT_EQ(Identity() + "[E1002]Fail to find method=arenarpc.e2e.TestService/Foo",
            reply.error_text);

  raw.service = "wrong.TestService";  // qualified but unknown: ENOMETHOD, not ENOSERVICE
  raw.method = "Echo";
  reply = client.Call(raw);
  EXPECT_EQ(ENOMETHOD, reply.error_code);
  EXPECT_EQ(Identity() + "[E1002]Fail to find method=wrong.TestService/Echo", reply.error_text);

  raw.service = "TestService";  // short name, unknown method
  raw.method = "echo";          // case-sensitive
  reply = client.Call(raw);
  EXPECT_EQ(ENOMETHOD, reply.error_code);
  EXPECT_EQ(Identity() + "[E1002]Fail to find method=arenarpc.e2e.TestService/echo",
            reply.error_text);

  raw.omit_request_meta = true;  // no `request` at all: empty service name
  reply = client.Call(raw);
  EXPECT_EQ(ENOSERVICE, reply.error_code);
  EXPECT_EQ(Identity() + "[E1001]Fail to find service=", reply.error_text);

  // Still served afterwards, and nothing counted against the method.
  raw = RawRequest{};
  raw.message = &request_;
  EXPECT_EQ(0, client.Call(raw).error_code);
  EXPECT_EQ(5u, server_->GetServerStats().rejected_unknown);
  EXPECT_EQ(1u, server_->GetMethodStats("arenarpc.e2e.TestService.Echo").calls);
}

TEST_P(ErrorsTest, UnparsableRequest) {
  StartServer();
  RawClient client(port_);
  RawRequest raw;
  raw.raw_payload = std::string("\xff\xff\xff\xff", 4);
  RawReply reply = client.Call(raw);
  EXPECT_EQ(EREQUEST, reply.error_code);
  EXPECT_EQ(Identity() +
                "[E1003]Fail to parse request=arenarpc.e2e.TestRequest, ContentType=pb, "
                "CompressType=none, ChecksumType=none, request_size=4",
            reply.error_text);
  ExpectFailureShape(reply);

  // Valid protobuf missing the required field: also EREQUEST; request_size counts the attachment.
  TestRequest empty_items;
  empty_items.add_items("x");  // no `message`
  raw.raw_payload = empty_items.SerializePartialAsString();
  raw.attachment = "12345";
  reply = client.Call(raw);
  EXPECT_EQ(EREQUEST, reply.error_code);
  EXPECT_EQ(Identity() +
                "[E1003]Fail to parse request=arenarpc.e2e.TestRequest, ContentType=pb, "
                "CompressType=none, ChecksumType=none, request_size=" +
                std::to_string(raw.raw_payload->size() + 5),
            reply.error_text);

  // Compressed garbage and an unknown compress type.
  raw = RawRequest{};
  raw.raw_payload = "not gzip";
  raw.compress_type = 2;
  reply = client.Call(raw);
  EXPECT_EQ(EREQUEST, reply.error_code);
  EXPECT_NE(std::string::npos, reply.error_text.find("CompressType=gzip")) << reply.error_text;
  raw.compress_type = 4;  // lz4: no codec, as in brpc
  reply = client.Call(raw);
  EXPECT_EQ(EREQUEST, reply.error_code);
  EXPECT_NE(std::string::npos, reply.error_text.find("CompressType=unknown")) << reply.error_text;

  raw = RawRequest{};
  raw.message = &request_;
  EXPECT_EQ(0, client.Call(raw).error_code);
  const MethodStats stats = server_->GetMethodStats("arenarpc.e2e.TestService.Echo");
  EXPECT_EQ(4u, stats.rejected);
  EXPECT_EQ(1u, stats.calls);
  EXPECT_EQ(1, service_->handler_calls());
  ExpectAllPairsReleased();
}

TEST_P(ErrorsTest, AttachmentSizeLargerThanBody) {
  StartServer();
  RawClient client(port_);
  RawRequest raw;
  raw.raw_payload = std::string("\x0a\x05hello", 7);
  raw.attachment_size = 9;
  RawReply reply = client.Call(raw);
  EXPECT_EQ(EREQUEST, reply.error_code);
  EXPECT_EQ(Identity() + "[E1003]attachment_size=9 is larger than request_size=7",
            reply.error_text);
  ExpectFailureShape(reply);
  raw = RawRequest{};
  raw.message = &request_;
  EXPECT_EQ(0, client.Call(raw).error_code);
}

// A large request is admitted or refused from its head (header and meta), before its body is
// read: a refused one is answered at once and the rest of its bytes is discarded unread
// (docs/server.md, "Overload"); the connection's framing goes on with the next request.
TEST_P(ErrorsTest, LargeRequestRefusedFromItsHeadIsAnsweredBeforeItsBodyArrives) {
  StartServer();
  RawClient client(port_);
  RawRequest refused;
  refused.method = "Nope";
  refused.raw_payload = std::string(1 << 20, 'r');
  const std::string refused_bytes = RawClient::Encode(refused, 41);
  constexpr size_t kFirst = 20000;
  client.SendBytes(std::string_view(refused_bytes).substr(0, kFirst));
  RawReply reply;
  ASSERT_TRUE(client.Read(&reply)) << "no answer before the body was sent";
  EXPECT_EQ(41, reply.correlation_id);
  EXPECT_EQ(ENOMETHOD, reply.error_code) << reply.error_text;
  ExpectFailureShape(reply);
  client.SendBytes(std::string_view(refused_bytes).substr(kFirst));

  // Admitted from its head, then served once its body is in, sent in two parts.
  TestRequest large;
  large.set_message(std::string(300000, 'a'));
  const std::string large_bytes = RawClient::Encode(RequestFor(&large), 42);
  client.SendBytes(std::string_view(large_bytes).substr(0, kFirst));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  client.SendBytes(std::string_view(large_bytes).substr(kFirst));
  ASSERT_TRUE(client.Read(&reply));
  EXPECT_EQ(42, reply.correlation_id);
  ASSERT_EQ(0, reply.error_code) << reply.error_text;
  TestResponse response;
  ASSERT_TRUE(ParseReply(reply, &response));
  EXPECT_EQ(large.message(), response.message());
  EXPECT_EQ(0, client.Call(RequestFor(&request_)).error_code);

  const ServerStats stats = server_->GetServerStats();
  EXPECT_EQ(1u, stats.rejected_unknown);
  // What came after the refusal was discarded unread, but for what one read had room for.
  EXPECT_GE(stats.refused_bytes_unread, refused_bytes.size() - kFirst - (64u << 10));
  EXPECT_LE(stats.refused_bytes_unread, refused_bytes.size() - kFirst);
  EXPECT_EQ(2u, server_->GetMethodStats("arenarpc.e2e.TestService.Echo").calls);
}

TEST_P(ErrorsTest, HandlerFailureCodes) {
  StartServer();
  RawClient client(port_);
  TestRequest request = request_;
  RawRequest raw = RequestFor(&request);
  raw.attachment = "dropped on failure";
  raw.user_fields["trace"] = "t1";

  request.set_fail_code(22);
  request.set_fail_text("bad");
  RawReply reply = client.Call(raw);
  EXPECT_EQ(22, reply.error_code);
  EXPECT_EQ(Identity() + "[E22]bad", reply.error_text);
  ExpectFailureShape(reply);
  ASSERT_EQ(1u, reply.frame.meta.user_fields().count("trace"));  // user_fields still come back
  EXPECT_EQ("t1-back", reply.frame.meta.user_fields().at("trace"));

  request.set_fail_code(-1);  // SetFailed(text): EINTERNAL, no [E…]
  request.set_fail_text("boom");
  reply = client.Call(raw);
  EXPECT_EQ(EINTERNAL, reply.error_code);
  EXPECT_EQ(Identity() + "boom", reply.error_text);

  request.set_fail_code(0);
  request.set_omit_required(true);  // reply cannot be serialized: ERESPONSE
  reply = client.Call(raw);
  EXPECT_EQ(ERESPONSE, reply.error_code);
  EXPECT_EQ(Identity() + "[E2002]Missing required fields in response: message", reply.error_text);
  ExpectFailureShape(reply);

  request.set_omit_required(false);
  request.set_async(true);  // failure from another thread
  request.set_fail_code(ELIMIT);
  request.set_fail_text("later");
  reply = client.Call(raw);
  EXPECT_EQ(ELIMIT, reply.error_code);
  EXPECT_EQ(Identity() + "[E2004]later", reply.error_text);

  const MethodStats stats = server_->GetMethodStats("arenarpc.e2e.TestService.Echo");
  EXPECT_EQ(4u, stats.calls);
  EXPECT_EQ(4u, stats.errors);
  ExpectAllPairsReleased();
}

TEST_P(ErrorsTest, HandlerEcloseClosesConnectionWithoutReply) {
  StartServer();
  RawClient client(port_);
  TestRequest request = request_;
  request.set_fail_code(ECLOSE);
  RawRequest raw = RequestFor(&request);
  client.Send(raw);
  EXPECT_TRUE(client.WaitForClose());
  RawClient other(port_);  // the server itself is fine
  RawRequest ok = RequestFor(&request_);
  EXPECT_EQ(0, other.Call(ok).error_code);
}

TEST_P(ErrorsTest, ChannelSeesServerErrors) {
  StartServer();
  auto channel = MakeChannel();
  TestService_Stub stub(channel.get());
  Controller controller;
  TestRequest request = request_;
  request.set_fail_code(22);
  request.set_fail_text("bad");
  TestResponse response;
  stub.Echo(&controller, &request, &response, nullptr);
  EXPECT_TRUE(controller.Failed());
  EXPECT_EQ(22, controller.ErrorCode());
  EXPECT_NE(std::string::npos, controller.ErrorText().find("bad")) << controller.ErrorText();
}

}  // namespace
}  // namespace arenarpc::e2e
