#include "protocol/meta_builder.h"

#include <gtest/gtest.h>

#include "arenarpc/error_codes.h"
#include "chain_util.h"
#include "hex.h"
#include "protocol/frame_codec.h"
#include "protocol/payload_codec.h"
#include "spec_frames.h"

namespace arenarpc::protocol {
namespace {

using namespace arenarpc::testing;

RequestMetaFields EchoCall() {
  RequestMetaFields call;
  call.service_name = "example.EchoService";
  call.method_name = "Echo";
  call.correlation_id = kSpecCorrelationId;
  return call;
}

TEST(MetaBuilder, RequestAsBrpcSendsIt) {
  RpcMeta meta;
  std::string error;
  ASSERT_TRUE(BuildRequestMeta(EchoCall(), {}, Chain(SpecPayload()), {}, &meta, &error)) << error;
  EXPECT_EQ(ToHex(EncodeToString(meta, SpecPayload(), "")), ToHex(SpecRequestFull()));
}

TEST(MetaBuilder, RequestWithLogIdAndAttachment) {
  RequestMetaFields call = EchoCall();
  call.log_id = 5;
  PayloadFields fields;
  fields.attachment_size = 2;
  RpcMeta meta;
  std::string error;
  ASSERT_TRUE(BuildRequestMeta(call, fields, Chain(SpecPayload()), Chain("AB"), &meta, &error));
  EXPECT_EQ(ToHex(EncodeToString(meta, SpecPayload(), "AB")), ToHex(SpecRequestLogIdAttachment()));
}

TEST(MetaBuilder, OptionalRequestFieldsOnlyWhenSet) {
  std::map<std::string, std::string> user{{"k", "v"}};
  RequestMetaFields call = EchoCall();
  call.request_id = "req-1";
  call.trace_id = 11;
  call.span_id = 12;
  call.parent_span_id = 13;
  call.timeout_ms = 250;
  call.user_fields = &user;
  call.authentication_data = "";
  PayloadFields fields;
  fields.compress_type = 2;
  fields.checksum_type = 1;
  RpcMeta meta;
  std::string error;
  ASSERT_TRUE(BuildRequestMeta(call, fields, Chain(SpecPayload()), {}, &meta, &error));
  EXPECT_EQ(meta.request().request_id(), "req-1");
  EXPECT_EQ(meta.request().trace_id(), 11);
  EXPECT_EQ(meta.request().span_id(), 12);
  EXPECT_EQ(meta.request().parent_span_id(), 13);
  EXPECT_EQ(meta.request().timeout_ms(), 250);
  EXPECT_FALSE(meta.request().has_log_id());
  EXPECT_EQ(meta.user_fields().at("k"), "v");
  EXPECT_TRUE(meta.has_authentication_data());
  EXPECT_EQ(meta.compress_type(), 2);
  EXPECT_EQ(ToHex(meta.checksum_value()), "61 f6 3a 7e");  // spec §3.4
  EXPECT_FALSE(meta.has_attachment_size());

  RpcMeta plain;
  ASSERT_TRUE(BuildRequestMeta(EchoCall(), {}, {}, {}, &plain, &error));
  EXPECT_FALSE(plain.request().has_trace_id());
  EXPECT_FALSE(plain.request().has_request_id());
  EXPECT_FALSE(plain.request().has_timeout_ms());
  EXPECT_FALSE(plain.has_authentication_data());
  EXPECT_TRUE(plain.user_fields().empty());

  PayloadFields wrong_size;
  wrong_size.attachment_size = 3;
  EXPECT_FALSE(BuildRequestMeta(EchoCall(), wrong_size, {}, Chain("AB"), &meta, &error));
  EXPECT_EQ(error, "attachment_size=3 but the attachment has 2 bytes");

  fields.checksum_type = 9;
  EXPECT_FALSE(BuildRequestMeta(EchoCall(), fields, {}, {}, &meta, &error));
  EXPECT_EQ(error, "unsupported checksum_type=9");
}

TEST(MetaBuilder, SuccessReplyAsBrpcSendsIt) {
  RpcMeta meta;
  std::string error;
  ASSERT_TRUE(
      BuildResponseMeta(kSpecCorrelationId, {}, Chain(SpecPayload()), {}, nullptr, &meta, &error));
  EXPECT_EQ(ToHex(EncodeToString(meta, SpecPayload(), "")), ToHex(SpecReplyFull()));
}

TEST(MetaBuilder, ErrorReplyAsBrpcSendsIt) {
  const std::string text = FormatErrorText(ServerIdentity("127.0.0.1:8000"), ENOMETHOD,
                                           NoMethodText("example.EchoService", "Foo"));
  EXPECT_EQ(text, "[127.0.0.1:8000][E1002]Fail to find method=example.EchoService/Foo");
  net::BufferChain out;
  EncodeErrorResponse(kSpecCorrelationId, ENOMETHOD, text, &out);
  EXPECT_EQ(ToHex(out.ToString()), ToHex(SpecErrorReply()));
}

TEST(MetaBuilder, ErrorTextsOfSpec53) {
  EXPECT_EQ(FormatErrorText("", ENOSERVICE, NoServiceText("Nope")),
            "[E1001]Fail to find service=Nope");
  EXPECT_EQ(FormatErrorText("", EREQUEST, AttachmentTooLargeText("request", 9, 7)),
            "[E1003]attachment_size=9 is larger than request_size=7");
  EXPECT_EQ(FormatErrorText("", 22, "bad"), "[E22]bad");
  EXPECT_EQ(FormatErrorText("", -1, "boom"), "boom");
  EXPECT_EQ(FormatErrorText("[10.1.2.3:8000]", -1, "boom"), "[10.1.2.3:8000]boom");
  EXPECT_EQ(WireErrorCode(-1), EINTERNAL);
  EXPECT_EQ(WireErrorCode(22), 22);
  EXPECT_EQ(WireErrorCode(ENOMETHOD), ENOMETHOD);
  EXPECT_EQ(MaxConcurrencyText(8), "Reached server's max_concurrency=8");
  EXPECT_EQ(kServerStoppingText, "Server is stopping");
}

TEST(MetaBuilder, ErrorReplyCarriesNoPayloadFieldsAndDecodes) {
  std::map<std::string, std::string> user{{"a", "b"}};
  RpcMeta meta;
  BuildErrorResponseMeta(-7, EINTERNAL, "boom", &user, &meta);
  EXPECT_FALSE(meta.has_attachment_size());
  net::BufferChain wire;
  EncodeFrame(meta, {}, {}, &wire);
  FrameDecoder decoder;
  protocol::Frame frame;
  ASSERT_EQ(decoder.Next(wire, &frame), DecodeStatus::kFrame);
  EXPECT_EQ(frame.meta.correlation_id(), -7);
  EXPECT_EQ(frame.meta.response().error_code(), 2001);
  EXPECT_EQ(frame.meta.response().error_text(), "boom");
  EXPECT_EQ(frame.meta.user_fields().at("a"), "b");
  EXPECT_TRUE(frame.payload.empty());
  // Empty text is not written, as brpc does.
  BuildErrorResponseMeta(1, 1003, "", nullptr, &meta);
  EXPECT_FALSE(meta.response().has_error_text());
}

// Sender and receiver sides together: serialize+compress+checksum, frame, decode, verify, parse.
TEST(MetaBuilder, FullRequestPipelineEveryCodec) {
  for (int compress : {0, 1, 2, 3}) {
    RpcMeta message;  // any message type will do
    message.mutable_request()->set_service_name(std::string(3000, 's'));
    message.mutable_request()->set_method_name("m");
    net::BufferChain payload;
    std::string error;
    ASSERT_TRUE(SerializePayload(message, compress, &payload, &error, "request")) << error;
    net::BufferChain attachment = Chain("attached bytes");
    PayloadFields fields{compress, attachment.size(), 1, true};
    RpcMeta meta;
    ASSERT_TRUE(BuildRequestMeta(EchoCall(), fields, payload, attachment, &meta, &error));
    net::BufferChain wire;
    EncodeFrame(meta, std::move(payload), std::move(attachment), &wire);

    FrameDecoder decoder;
    protocol::Frame frame;
    ASSERT_EQ(decoder.Next(wire, &frame), DecodeStatus::kFrame) << decoder.error();
    EXPECT_EQ(frame.attachment.ToString(), "attached bytes");
    RpcMeta parsed;
    ASSERT_TRUE(MergePayload(PayloadEncoding::Of(frame.meta), frame.payload, frame.attachment,
                             &parsed, &error))
        << error;
    EXPECT_EQ(parsed.request().service_name(), message.request().service_name());
  }
}

}  // namespace
}  // namespace arenarpc::protocol
