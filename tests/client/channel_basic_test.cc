// Channel basics against FakeServer: Init validation, the request bytes brpc would send, sync and
// async calls, ids and user fields, attachments, compression, error replies, bad replies and
// responses on the caller's arena.
#include <google/protobuf/arena.h>

#include <thread>

#include "../protocol/hex.h"
#include "arenarpc/memory/page_allocator.h"
#include "arenarpc/memory/paged_arena.h"
#include "client_test_util.h"

namespace arenarpc::testing {
namespace {

using example::EchoRequest;
using example::EchoResponse;
using example::EchoService_Stub;

TEST(ChannelInit, RejectsInvalidOptionsWithAReason) {
  const auto expect_rejected = [](ChannelOptions options, const std::string& mentions) {
    Channel channel;
    EXPECT_EQ(channel.Init("127.0.0.1:8000", &options), -1) << mentions;
    EXPECT_NE(channel.last_error().find(mentions), std::string::npos) << channel.last_error();
  };
  ChannelOptions o;
  o.timeout_ms = 0;
  expect_rejected(o, "timeout_ms=0");
  o = {};
  o.connect_timeout_ms = -5;
  expect_rejected(o, "connect_timeout_ms=-5");
  o = {};
  o.max_retry = -1;
  expect_rejected(o, "max_retry=-1");
  o = {};
  o.connection_type = "pooledd";
  expect_rejected(o, "connection_type=\"pooledd\"");
  o = {};
  o.io_threads = 0;
  expect_rejected(o, "io_threads=0");
  o = {};
  o.max_body_size = 0;
  expect_rejected(o, "max_body_size=0");
}

TEST(ChannelOptionsTest, ClosedSetsTakeTheirEnumOrBrpcsSpelling) {
  ChannelOptions o;
  EXPECT_TRUE(o.connection_type == ConnectionType::kSingle);
  EXPECT_TRUE(o.protocol == ChannelProtocol::kBaiduStd);
  o.connection_type = "pooled";
  EXPECT_TRUE(o.connection_type == ConnectionType::kPooled);
  o.connection_type = std::string("short");
  EXPECT_EQ("short", o.connection_type.name());
  o.connection_type = ConnectionType::kSingle;
  EXPECT_EQ("single", o.connection_type.name());
  for (const char* grpc : {"grpc", "h2:grpc"}) {
    o.protocol = grpc;
    EXPECT_TRUE(o.protocol == ChannelProtocol::kGrpc) << grpc;
    EXPECT_EQ("grpc", o.protocol.name());  // the canonical spelling
  }
  o.protocol = "";
  EXPECT_TRUE(o.protocol == ChannelProtocol::kBaiduStd);
  o.protocol = "http";
  EXPECT_FALSE(o.protocol.valid());
  EXPECT_FALSE(o.protocol == ChannelProtocol::kBaiduStd);
  EXPECT_EQ("http", o.protocol.name());
  Channel channel;
  EXPECT_EQ(-1, channel.Init("127.0.0.1:8000", &o));
  EXPECT_NE(std::string::npos, channel.last_error().find("protocol=\"http\" is not supported"))
      << channel.last_error();
}

TEST(ChannelInit, RejectsBadAddressesAndDoubleInit) {
  for (const char* address : {"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:99999",
                              "no-such-host.invalid:80", "0.0.0.0:80"}) {
    Channel channel;
    EXPECT_EQ(channel.Init(address, nullptr), -1) << address;
    EXPECT_NE(channel.last_error().find("address"), std::string::npos) << channel.last_error();
  }
  Channel channel;
  ASSERT_EQ(channel.Init("127.0.0.1:8000", nullptr), 0) << channel.last_error();
  EXPECT_EQ(channel.remote_side(), "127.0.0.1:8000");
  EXPECT_EQ(channel.Init("127.0.0.1:8001", nullptr), -1);
  EXPECT_NE(channel.last_error().find("already initialized"), std::string::npos);
}

TEST(ChannelInit, UninitializedChannelFailsCalls) {
  Channel channel;
  Controller cntl;
  EchoRequest request;
  request.set_message("x");
  EchoResponse response;
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
  EXPECT_TRUE(cntl.Failed());
  EXPECT_EQ(cntl.ErrorCode(), EINVAL);
  EXPECT_NE(cntl.ErrorText().find("not initialized"), std::string::npos);
}

TEST(Channel, LocalhostIsResolvedOnce) {
  FakeServer server(EchoHandler());
  Channel channel;
  ChannelOptions options = TestOptions();
  ASSERT_EQ(channel.Init("localhost:" + std::to_string(server.port()), &options), 0)
      << channel.last_error();
  // Whatever localhost resolved to, it is a concrete address now.
  EXPECT_NE(channel.remote_side().find(std::to_string(server.port())), std::string::npos);
  if (channel.remote_side() != "127.0.0.1:" + std::to_string(server.port())) {
    GTEST_SKIP() << "localhost resolved to " << channel.remote_side() << ", server is on IPv4";
  }
  Controller cntl;
  EchoRequest request;
  request.set_message("hi");
  EchoResponse response;
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
  ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(response.message(), "hi");
}

// Spec §10.1/10.2: a fresh channel's first call is byte for byte what brpc >= 1.14 sends, and the
// spec's reply bytes parse.
TEST(Channel, FirstRequestIsTheSpecExampleByteForByte) {
  std::string seen;
  FakeServer server([&seen](const std::shared_ptr<FakeConnection>& connection, FakeRequest&& r) {
    seen = r.raw_frame;
    connection->SendRaw(FromHex(
        "50 52 50 43 00 00 00 19 00 00 00 12 12 02 08 00"
        "18 00 20 82 80 80 80 10 50 00 58 00 62 00 0a 05"
        "68 65 6c 6c 6f"));
  });
  Channel channel;
  ChannelOptions options = TestOptions();
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  Controller cntl;
  EchoRequest request;
  request.set_message("hello");
  EchoResponse response;
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
  ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(response.message(), "hello");
  EXPECT_EQ(ToHex(seen), ToHex(FromHex(
      "50 52 50 43 00 00 00 32 00 00 00 2b 0a 1b 0a 13"
      "65 78 61 6d 70 6c 65 2e 45 63 68 6f 53 65 72 76"
      "69 63 65 12 04 45 63 68 6f 18 00 20 82 80 80 80"
      "10 50 00 58 00 62 00 0a 05 68 65 6c 6c 6f")));
  EXPECT_EQ(cntl.remote_side(), server.address());
  EXPECT_GT(cntl.latency_us(), 0);
}

// Spec §10.1: "with log_id 5 and a 2-byte attachment AB".
TEST(Channel, LogIdAndAttachmentAsBrpcWritesThem) {
  std::string seen;
  FakeServer server([&seen](const std::shared_ptr<FakeConnection>& connection, FakeRequest&& r) {
    seen = r.raw_frame;
    EchoRequest request;
    ASSERT_TRUE(DecodeRequest(r, &request));
    connection->Reply(r, EchoOf(request), "reply-attachment");
  });
  Channel channel;
  ChannelOptions options = TestOptions();
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  Controller cntl;
  cntl.set_log_id(5);
  cntl.request_attachment().Append("AB");
  EchoRequest request;
  request.set_message("hello");
  EchoResponse response;
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
  ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(ToHex(seen), ToHex(FromHex(
      "50 52 50 43 00 00 00 38 00 00 00 2f 0a 1d 0a 13"
      "65 78 61 6d 70 6c 65 2e 45 63 68 6f 53 65 72 76"
      "69 63 65 12 04 45 63 68 6f 18 05 18 00 20 82 80"
      "80 80 10 28 02 50 00 58 00 62 00 0a 05 68 65 6c"
      "6c 6f 41 42")));
  EXPECT_EQ(cntl.response_attachment().ToString(), "reply-attachment");
  EXPECT_EQ(cntl.request_attachment().ToString(), "AB");  // the caller's copy is intact
}

TEST(Channel, MetaCarriesIdsTraceAndUserFieldsBothWays) {
  protocol::RpcMeta seen;
  FakeServer server([&seen](const std::shared_ptr<FakeConnection>& connection, FakeRequest&& r) {
    seen = r.meta;
    EchoRequest request;
    ASSERT_TRUE(DecodeRequest(r, &request));
    connection->ReplyRaw(r.meta.correlation_id(), EchoOf(request).SerializeAsString(), {},
                         [](protocol::RpcMeta& meta) { (*meta.mutable_user_fields())["rk"] = "rv"; });
  });
  Channel channel;
  ChannelOptions options = TestOptions();
  options.deliver_timeout = true;
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoService_Stub stub(&channel);
  for (int i = 0; i < 2; ++i) {
    Controller cntl;
    cntl.set_log_id(-7);
    cntl.set_request_id("req-42");
    cntl.set_trace(11, 12, 13);
    cntl.request_user_fields()["k"] = "v";
    EchoRequest request;
    request.set_message("m");
    EchoResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
    EXPECT_EQ(seen.request().service_name(), "example.EchoService");
    EXPECT_EQ(seen.request().method_name(), "Echo");
    EXPECT_EQ(seen.request().log_id(), -7);
    EXPECT_EQ(seen.request().request_id(), "req-42");
    EXPECT_EQ(seen.request().trace_id(), 11);
    EXPECT_EQ(seen.request().span_id(), 12);
    EXPECT_EQ(seen.request().parent_span_id(), 13);
    EXPECT_GT(seen.request().timeout_ms(), 0);
    EXPECT_LE(seen.request().timeout_ms(), 2000);
    EXPECT_EQ(seen.user_fields().at("k"), "v");
    // brpc's versioned handle: slot i+1, version 2 (first attempt).
    EXPECT_EQ(static_cast<uint64_t>(seen.correlation_id()), ((uint64_t{1} + i) << 32) | 2u);
    EXPECT_EQ(cntl.response_user_fields().at("rk"), "rv");
  }
}

TEST(Channel, AsyncCallRunsDoneOnARuntimeThread) {
  FakeServer server(EchoHandler());
  Channel channel;
  ChannelOptions options = TestOptions();
  options.io_threads = 2;
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  Controller cntl;
  EchoRequest request;
  request.set_message("async");
  EchoResponse response;
  CountingDone done;
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, &done);
  ASSERT_TRUE(done.WaitForRuns(1));
  EXPECT_NE(done.ran_on(), std::this_thread::get_id());
  ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(response.message(), "async");
  EXPECT_EQ(done.runs(), 1);
  EXPECT_EQ(channel.stats().calls, 1u);
}

class ChannelCompression : public ::testing::TestWithParam<CompressType> {};

TEST_P(ChannelCompression, RequestAndReplyPayloadsAreCompressed) {
  const CompressType type = GetParam();
  std::atomic<int> seen_type{-1};
  FakeServer server([&](const std::shared_ptr<FakeConnection>& connection, FakeRequest&& r) {
    seen_type = r.meta.compress_type();
    EchoRequest request;
    ASSERT_TRUE(DecodeRequest(r, &request));
    net::BufferChain plain, compressed;
    plain.Append(EchoOf(request).SerializeAsString());
    std::string error;
    ASSERT_TRUE(protocol::Compress(static_cast<int>(type), plain, &compressed, &error)) << error;
    connection->ReplyRaw(r.meta.correlation_id(), compressed.ToString(), {},
                         [&](protocol::RpcMeta& meta) { meta.set_compress_type(static_cast<int>(type)); });
  });
  Channel channel;
  ChannelOptions options = TestOptions();
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  Controller cntl;
  cntl.set_request_compress_type(type);
  EchoRequest request;
  request.set_message(std::string(4000, 'z'));  // compressible
  request.add_nested()->set_text("t");
  EchoResponse response;
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
  ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(seen_type.load(), static_cast<int>(type));
  EXPECT_EQ(response.message(), request.message());
  EXPECT_EQ(response.nested(0).text(), "t");
  EXPECT_EQ(cntl.response_compress_type(), type);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, ChannelCompression,
                         ::testing::Values(CompressType::kNone, CompressType::kSnappy,
                                           CompressType::kGzip, CompressType::kZlib));

TEST(Channel, UnsupportedCompressionOrMissingRequiredFieldsFailLocally) {
  FakeServer server(EchoHandler());
  Channel channel;
  ChannelOptions options = TestOptions();
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoService_Stub stub(&channel);
  {
    Controller cntl;
    cntl.set_request_compress_type(static_cast<CompressType>(4));  // lz4: no codec, as in brpc
    EchoRequest request;
    request.set_message("x");
    EchoResponse response;
    CountingDone done;
    stub.Echo(&cntl, &request, &response, &done);
    ASSERT_TRUE(done.WaitForRuns(1));  // async failures still complete through done
    EXPECT_EQ(cntl.ErrorCode(), EREQUEST);
  }
  {
    Controller cntl;
    EchoRequest request;  // required `message` unset
    EchoResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    EXPECT_EQ(cntl.ErrorCode(), EREQUEST);
    EXPECT_NE(cntl.ErrorText().find("Missing required fields in request"), std::string::npos)
        << cntl.ErrorText();
  }
  EXPECT_EQ(server.requests_received(), 0);
}

TEST(Channel, ErrorRepliesKeepCodeAndShowBrpcText) {
  FakeServer server([](const std::shared_ptr<FakeConnection>& connection, FakeRequest&& r) {
    EchoRequest request;
    ASSERT_TRUE(DecodeRequest(r, &request));
    const int code = std::stoi(request.message());
    connection->ReplyError(r.meta.correlation_id(), code,
                           "[127.0.0.1:8000][E" + std::to_string(code) + "]text " +
                               std::to_string(code));
  });
  Channel channel;
  ChannelOptions options = TestOptions();
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoService_Stub stub(&channel);
  for (int code : {1001, 1002, 1003, 22, 2001, 2004}) {
    Controller cntl;
    EchoRequest request;
    request.set_message(std::to_string(code));
    EchoResponse response;
    response.set_message("untouched");
    stub.Echo(&cntl, &request, &response, nullptr);
    EXPECT_TRUE(cntl.Failed());
    EXPECT_EQ(cntl.ErrorCode(), code);
    EXPECT_EQ(cntl.ErrorText(), "[E" + std::to_string(code) + "][127.0.0.1:8000][E" +
                                    std::to_string(code) + "]text " + std::to_string(code));
    EXPECT_EQ(response.message(), "untouched");  // a failed reply's payload is never parsed
  }
  EXPECT_EQ(channel.stats().failed_calls, 6u);
}

TEST(Channel, BadReplyPayloadsFailWithBrpcCodes) {
  FakeServer server([](const std::shared_ptr<FakeConnection>& connection, FakeRequest&& r) {
    EchoRequest request;
    ASSERT_TRUE(DecodeRequest(r, &request));
    const int64_t id = r.meta.correlation_id();
    if (request.message() == "garbage-payload") {
      connection->ReplyRaw(id, "\xff\xff\xff", {});
    } else if (request.message() == "missing-required") {
      connection->ReplyRaw(id, "", {});  // EchoResponse.message is required
    } else if (request.message() == "attachment-too-big") {
      connection->ReplyRaw(id, "abc", {}, [](protocol::RpcMeta& m) { m.set_attachment_size(9); });
    } else if (request.message() == "bad-checksum") {
      connection->ReplyRaw(id, EchoOf(request).SerializeAsString(), {}, [](protocol::RpcMeta& m) {
        m.set_checksum_type(1);
        m.set_checksum_value(std::string("\x00\x00\x00\x00", 4));
      });
    } else if (request.message() == "minimal-meta") {  // no `response`, no extra fields: success
      protocol::RpcMeta meta;
      meta.set_correlation_id(id);
      connection->SendRaw(EncodeFakeFrame(meta, EchoOf(request).SerializeAsString(), {}));
    }
  });
  Channel channel;
  ChannelOptions options = TestOptions();
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoService_Stub stub(&channel);
  const auto call = [&stub](const std::string& what, Controller* cntl, EchoResponse* response) {
    EchoRequest request;
    request.set_message(what);
    stub.Echo(cntl, &request, response, nullptr);
  };
  for (const std::string what : {"garbage-payload", "missing-required", "bad-checksum"}) {
    Controller cntl;
    EchoResponse response;
    call(what, &cntl, &response);
    EXPECT_EQ(cntl.ErrorCode(), EREQUEST) << what;
    EXPECT_NE(cntl.ErrorText().find("[E1003]Fail to parse response=example.EchoResponse"),
              std::string::npos)
        << what << ": " << cntl.ErrorText();
  }
  {
    Controller cntl;
    EchoResponse response;
    call("attachment-too-big", &cntl, &response);
    EXPECT_EQ(cntl.ErrorCode(), ERESPONSE);
    EXPECT_NE(cntl.ErrorText().find("attachment_size=9"), std::string::npos) << cntl.ErrorText();
  }
  {
    Controller cntl;
    EchoResponse response;
    call("minimal-meta", &cntl, &response);
    EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
    EXPECT_EQ(response.message(), "minimal-meta");
  }
}

// tRPC-cpp style client arena: request and response live on the caller's arena and the reply is
// parsed straight into them (sub-messages allocated on that arena too).
TEST(Channel, ResponseIsParsedIntoTheCallersArena) {
  FakeServer server(EchoHandler());
  Channel channel;
  ChannelOptions options = TestOptions();
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoService_Stub stub(&channel);

  google::protobuf::Arena arena;
  auto* request = google::protobuf::Arena::CreateMessage<EchoRequest>(&arena);
  auto* response = google::protobuf::Arena::CreateMessage<EchoResponse>(&arena);
  request->set_message("on-arena");
  for (int i = 0; i < 50; ++i) request->add_nested()->add_values(i);
  const size_t used_before = arena.SpaceUsed();
  Controller cntl;
  stub.Echo(&cntl, request, response, nullptr);
  ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(response->GetArena(), &arena);
  ASSERT_EQ(response->nested_size(), 50);
  EXPECT_EQ(response->nested(49).GetArena(), &arena);
  EXPECT_EQ(response->nested(49).values(0), 49);
  EXPECT_GT(arena.SpaceUsed(), used_before);  // the reply's objects were allocated there

  // The same with a paged arena from the memory engine.
  std::shared_ptr<memory::PageAllocator> pages =
      memory::MakeCachedPageAllocator(memory::PagePoolOptions{}, nullptr);
  memory::PagedArenaFactory factory(pages);
  {
    memory::PagedArena paged(factory);
    auto* paged_response = google::protobuf::Arena::CreateMessage<EchoResponse>(paged.get());
    Controller cntl2;
    const uint64_t pages_before = pages->stats().allocations;
    stub.Echo(&cntl2, request, paged_response, nullptr);
    ASSERT_FALSE(cntl2.Failed()) << cntl2.ErrorText();
    EXPECT_EQ(paged_response->GetArena(), paged.get());
    EXPECT_EQ(paged_response->nested(10).GetArena(), paged.get());
    EXPECT_EQ(paged_response->message(), "on-arena");
    EXPECT_GE(pages->stats().allocations, pages_before);
  }
}

TEST(Channel, ReusedResponseIsReplacedNotAppended) {
  FakeServer server(EchoHandler());
  Channel channel;
  ChannelOptions options = TestOptions();
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoService_Stub stub(&channel);
  EchoResponse response;
  for (int round = 0; round < 3; ++round) {
    Controller cntl;
    EchoRequest request;
    request.set_message("r" + std::to_string(round));
    request.add_nested()->set_text("n");
    stub.Echo(&cntl, &request, &response, nullptr);
    ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
    EXPECT_EQ(response.message(), "r" + std::to_string(round));
    EXPECT_EQ(response.nested_size(), 1);
  }
}

}  // namespace
}  // namespace arenarpc::testing
