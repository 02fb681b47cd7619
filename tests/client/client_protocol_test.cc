// The client protocol seam (client/client_protocol.h) without sockets: each protocol prepares and
// packs a request, and its session, driven by a fake connection (ClientSessionHost), writes it and
// turns the server's bytes into completions of the right attempt — baidu_std against frames built
// here, gRPC against our GrpcServerSession.
#include <gtest/gtest.h>

#include <asio/io_context.hpp>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/channel.h"
#include "arenarpc/error_codes.h"
#include "client/baidu_std_client_protocol.h"
#include "client/baidu_std_request_frame.h"
#include "client/channel_core.h"
#include "client/client_protocol.h"
#include "client/client_session.h"
#include "client/grpc_client_protocol.h"
#include "client_test.pb.h"
#include "protocol/frame_codec.h"
#include "protocol/h2/grpc_server_session.h"

namespace arenarpc::client {
namespace {

using example::EchoRequest;
using example::EchoResponse;

// One completion the session handed to the connection, read as ClientCall reads it.
struct Completion {
  int64_t correlation_id = 0;
  int server_error = 0;
  std::string text;
  int read_error = 0;
  EchoResponse response;
  Controller controller;
};

// The connection's side of the seam, recording what the session asks of it.
class FakeConnection final : public ClientSessionHost {
 public:
  bool connected() const noexcept override { return connected_; }
  uint64_t socket_unsent_bytes() const noexcept override { return socket_unsent; }
  const std::shared_ptr<net::Connection>& socket() const noexcept override { return socket_; }
  asio::io_context& loop() noexcept override { return loop_; }
  bool closed() const noexcept override { return closed_; }
  bool exclusive() const noexcept override { return false; }
  const std::string& remote_side() const noexcept override { return remote_side_; }
  int close_code() const noexcept override { return close_code_; }
  std::string close_text() const override { return close_text_; }
  bool WriteRequest(int64_t correlation_id, net::BufferChain&& bytes) override {
    if (!Awaits(correlation_id)) return false;
    written_ids.push_back(correlation_id);
    written.Append(bytes.ToString());
    return true;
  }
  void WriteOutput(net::BufferChain&& bytes, std::span<const int64_t> started) override {
    written_ids.insert(written_ids.end(), started.begin(), started.end());
    written.Append(bytes.ToString());
  }
  bool Awaits(int64_t correlation_id) const noexcept override {
    return std::find(awaited.begin(), awaited.end(), correlation_id) != awaited.end();
  }
  void Complete(int64_t correlation_id, ClientReply& reply) override {
    auto& completion = completions.emplace_back(std::make_unique<Completion>());
    completion->correlation_id = correlation_id;
    completion->server_error = reply.ServerError(&completion->text);
    if (completion->server_error == 0) {
      completion->read_error =
          reply.ReadInto(completion->controller, &completion->response, 1 << 20, &completion->text);
    }
  }
  void FailAttempt(int64_t correlation_id, int code, const std::string& text,
                   bool request_sent) override {
    failures.push_back({correlation_id, code, request_sent});
    (void)text;
  }
  void ReleaseIfIdle() override {}
  void OnReplyRead() noexcept override { ++replies_read; }
  void ArmWatchdog(bool fast) override { watchdog_fast = fast; armed = true; }
  bool watchdog_armed() const noexcept override { return armed; }
  void SetCloseReason(int code, std::string text) override {
    close_code_ = code;
    close_text_ = std::move(text);
  }
  void CloseSocket(int code, std::string text) override {
    SetCloseReason(code, std::move(text));
    closed_ = true;
  }
  void Retire() noexcept override { retired = true; }

  void Connect() { connected_ = true; }

  struct Failure {
    int64_t correlation_id;
    int code;
    bool request_sent;
  };
  std::vector<int64_t> awaited;      // what the connection's pending map would hold
  uint64_t socket_unsent = 0;
  net::BufferChain written;
  std::vector<int64_t> written_ids;  // requests written (baidu_std) or started (gRPC), in order
  std::vector<std::unique_ptr<Completion>> completions;
  std::vector<Failure> failures;
  int replies_read = 0;
  bool armed = false;
  bool watchdog_fast = false;
  bool retired = false;

 private:
  bool connected_ = false;
  bool closed_ = false;
  int close_code_ = 0;
  std::string close_text_;
  std::string remote_side_ = "127.0.0.1:8000";
  std::shared_ptr<net::Connection> socket_;
  asio::io_context loop_;
};

ChannelOptions Options(const char* protocol) {
  ChannelOptions options;
  options.protocol = protocol;
  options.io_threads = 1;
  return options;
}

// Prepares `message` as a call of EchoService.Echo on `core`'s protocol.
std::unique_ptr<ClientRequest> Prepare(ChannelCore& core, const std::string& message,
                                       Controller& controller, int* code, std::string* text) {
  EchoRequest request;
  request.set_message(message);
  return core.protocol().Prepare(
      RequestSource{*example::EchoService::descriptor()->FindMethodByName("Echo"), request,
                    controller, {}},
      core, code, text);
}

// A request prepared by `protocol` and a session of it on a fake connection.
struct Seam {
  Seam(const char* protocol, const std::string& message) : Seam(Options(protocol), message) {}
  Seam(const ChannelOptions& options, const std::string& message)
      : core(options, "127.0.0.1:8000") {
    request = Prepare(core, message, controller, &code, &text);
    session = core.protocol().NewSession(connection, core.options());
  }
  // Packs and submits one attempt the connection now awaits.
  void Submit(int64_t correlation_id, std::chrono::steady_clock::time_point deadline =
                                          std::chrono::steady_clock::time_point::max()) {
    connection.awaited.push_back(correlation_id);
    AttemptFacts facts;
    facts.correlation_id = correlation_id;
    facts.deadline = deadline;
    facts.authority = "127.0.0.1:8000";
    PackedRequest packed = request->Pack(facts);
    request_bytes += session->RequestBytes(packed);
    session->Submit(correlation_id, std::move(packed));
  }

  ChannelCore core;
  Controller controller;
  int code = 0;
  std::string text;
  std::unique_ptr<ClientRequest> request;
  FakeConnection connection;
  std::unique_ptr<ClientSession> session;
  size_t request_bytes = 0;  // of the attempts submitted
};

net::BufferChain ReplyFrame(int64_t correlation_id, const std::string& message,
                            int error_code = 0) {
  protocol::RpcMeta meta;
  meta.set_correlation_id(correlation_id);
  net::BufferChain payload;
  if (error_code != 0) {
    meta.mutable_response()->set_error_code(error_code);
    meta.mutable_response()->set_error_text("busy");
  } else {
    EchoResponse response;
    response.set_message(message);
    payload.Append(response.SerializeAsString());
  }
  net::BufferChain frame;
  protocol::EncodeFrame(meta, std::move(payload), net::BufferChain(), &frame);
  return frame;
}

TEST(BaiduStdClientProtocol, PacksEachAttemptWithItsCorrelationIdAndDeliversRepliesByIt) {
  Seam seam("baidu_std", "hello");
  ASSERT_EQ("baidu_std", seam.core.protocol().name());
  ASSERT_NE(nullptr, seam.request) << seam.text;
  FakeConnection& connection = seam.connection;
  ClientSession* session = seam.session.get();
  connection.Connect();
  // Two attempts of one call: the same bytes under two correlation ids.
  seam.Submit(0x100000002);
  seam.Submit(0x100000003);
  EXPECT_EQ(seam.request_bytes, connection.written.size());
  ASSERT_EQ((std::vector<int64_t>{0x100000002, 0x100000003}), connection.written_ids);
  protocol::FrameDecoder decoder;
  for (int64_t id : {int64_t{0x100000002}, int64_t{0x100000003}}) {
    protocol::Frame frame;
    ASSERT_EQ(protocol::DecodeStatus::kFrame, decoder.Next(connection.written, &frame));
    EXPECT_EQ(id, frame.meta.correlation_id());
    EXPECT_EQ("example.EchoService", frame.meta.request().service_name());
    EXPECT_EQ("Echo", frame.meta.request().method_name());
    EchoRequest sent;
    ASSERT_TRUE(sent.ParseFromString(frame.payload.ToString()));
    EXPECT_EQ("hello", sent.message());
  }
  EXPECT_TRUE(connection.written.empty());

  // Replies in any order, cut anywhere: each completes its attempt; a partial frame is timed.
  net::BufferChain input = ReplyFrame(0x100000003, "second");
  input.Append(ReplyFrame(0x100000002, "first", ELIMIT).ToString());
  std::string bytes = input.ToString();
  net::BufferChain head;
  head.Append(bytes.substr(0, 20));
  ASSERT_TRUE(session->OnInput(head));
  EXPECT_TRUE(connection.completions.empty());
  EXPECT_NE(ClientSession::Clock::time_point{}, session->partial_reply_since());
  head.Append(bytes.substr(20));
  ASSERT_TRUE(session->OnInput(head));
  EXPECT_TRUE(head.empty());
  EXPECT_EQ(ClientSession::Clock::time_point{}, session->partial_reply_since());
  ASSERT_EQ(2u, connection.completions.size());
  EXPECT_EQ(0x100000003, connection.completions[0]->correlation_id);
  EXPECT_EQ(0, connection.completions[0]->server_error);
  EXPECT_EQ(0, connection.completions[0]->read_error) << connection.completions[0]->text;
  EXPECT_EQ("second", connection.completions[0]->response.message());
  EXPECT_EQ(0x100000002, connection.completions[1]->correlation_id);
  EXPECT_EQ(ELIMIT, connection.completions[1]->server_error);
  EXPECT_EQ("busy", connection.completions[1]->text);
  EXPECT_EQ(2, connection.replies_read);

  // Bytes that are no frame: the session asks for the close, with brpc's EINVAL.
  net::BufferChain garbage;
  garbage.Append("GARBAGE-GARBAGE-GARBAGE");
  EXPECT_FALSE(session->OnInput(garbage));
  EXPECT_EQ(EINVAL, connection.close_code());
}

TEST(BaiduStdClientProtocol, QueuesWhileTheSocketIsFullAndDropsAbandonedRequestsUnsent) {
  Seam seam("baidu_std", "queued");
  ASSERT_NE(nullptr, seam.request) << seam.text;
  FakeConnection& connection = seam.connection;
  ClientSession* session = seam.session.get();

  // Not connected yet: both wait, in order, and count against max_unwritten_bytes.
  seam.Submit(2);
  seam.Submit(3);
  EXPECT_TRUE(connection.written_ids.empty());
  EXPECT_TRUE(session->requests_waiting());
  EXPECT_GT(seam.request_bytes, 0u);
  EXPECT_EQ(seam.request_bytes, session->unsent_request_bytes());

  // Connected but the socket holds more than the hand-off window: still waiting.
  connection.Connect();
  connection.socket_unsent = BaiduStdClientSession::kHandOffWindow + 1;
  session->OnConnected();
  EXPECT_TRUE(connection.written_ids.empty());

  // Attempt 2 was abandoned meanwhile: once the socket drains only attempt 3 goes out.
  connection.awaited = {3};
  connection.socket_unsent = 0;
  session->Pump();
  EXPECT_EQ(std::vector<int64_t>{3}, connection.written_ids);
  EXPECT_FALSE(session->requests_waiting());
  EXPECT_EQ(0u, session->unsent_request_bytes());
}

// The frame as EncodeFrame packs `frame`'s meta, payload and attachment now.
std::string Reencoded(const protocol::Frame& frame) {
  net::BufferChain payload, attachment, out;
  payload.AppendShared(frame.payload);
  attachment.AppendShared(frame.attachment);
  protocol::EncodeFrame(frame.meta, std::move(payload), std::move(attachment), &out);
  return out.ToString();
}

TEST(BaiduStdRequestFrame, RestampTellsTheTimeLeftInTheEncodingOfAFreshFrame) {
  using Clock = std::chrono::steady_clock;
  ChannelOptions options = Options("baidu_std");
  options.deliver_timeout = true;
  ChannelCore core(options, "127.0.0.1:8000");
  Controller controller;
  controller.request_attachment().Append("attached");
  int code = 0;
  std::string text;
  std::unique_ptr<ClientRequest> request =
      Prepare(core, std::string(20000, 'x'), controller, &code, &text);
  ASSERT_NE(nullptr, request) << text;
  AttemptFacts facts;
  facts.correlation_id = 5;
  const Clock::time_point packed_at = Clock::now();
  facts.deadline = packed_at + std::chrono::milliseconds(1000);
  PackedRequest packed = request->Pack(facts);
  BaiduStdRequestFrame& frame = std::get<0>(packed);
  EXPECT_EQ(facts.deadline, frame.deadline);
  EXPECT_GE(frame.timeout_ms, 999);
  EXPECT_LE(frame.timeout_ms, 1000);
  const std::string as_packed = frame.bytes.ToString();

  // No whole millisecond lost since the pack (or a clock behind it): nothing to change.
  EXPECT_EQ(RestampResult::kUnchanged, RestampTimeout(frame, packed_at - std::chrono::seconds(1)));
  EXPECT_EQ(as_packed, frame.bytes.ToString());

  // 900 ms later: 100 ms left, and timeout_ms's varint is one byte shorter (1000 -> 100 fits
  // one byte less), so meta_size and body_size shrink with it.
  const Clock::time_point later = facts.deadline - std::chrono::milliseconds(100);
  ASSERT_EQ(RestampResult::kRestamped, RestampTimeout(frame, later));
  EXPECT_EQ(100, frame.timeout_ms);
  EXPECT_EQ(as_packed.size() - 1, frame.bytes.size());
  protocol::FrameDecoder decoder;
  protocol::Frame decoded;
  net::BufferChain written;
  written.AppendShared(frame.bytes);
  ASSERT_EQ(protocol::DecodeStatus::kFrame, decoder.Next(written, &decoded)) << decoder.error();
  EXPECT_TRUE(written.empty());
  EXPECT_EQ(100, decoded.meta.request().timeout_ms());
  EXPECT_EQ(5, decoded.meta.correlation_id());
  EXPECT_EQ("example.EchoService", decoded.meta.request().service_name());
  EXPECT_EQ("Echo", decoded.meta.request().method_name());
  EXPECT_EQ("attached", decoded.attachment.ToString());
  EchoRequest sent;
  ASSERT_TRUE(sent.ParseFromString(decoded.payload.ToString()));
  EXPECT_EQ(std::string(20000, 'x'), sent.message());
  // Byte for byte what a frame packed with that meta is (the spec's encoding, as brpc's).
  EXPECT_EQ(Reencoded(decoded), frame.bytes.ToString());

  // Restamped again only when time was lost; past the deadline the frame is left for the caller
  // to drop.
  EXPECT_EQ(RestampResult::kUnchanged, RestampTimeout(frame, later));
  EXPECT_EQ(RestampResult::kExpired, RestampTimeout(frame, facts.deadline));
  EXPECT_EQ(100, frame.timeout_ms);

  // Without deliver_timeout the meta has no timeout_ms and nothing is stamped.
  ChannelCore plain_core(Options("baidu_std"), "127.0.0.1:8000");
  std::unique_ptr<ClientRequest> plain = Prepare(plain_core, "p", controller, &code, &text);
  ASSERT_NE(nullptr, plain) << text;
  PackedRequest plain_packed = plain->Pack(facts);
  BaiduStdRequestFrame& plain_frame = std::get<0>(plain_packed);
  EXPECT_EQ(Clock::time_point::max(), plain_frame.deadline);
  const std::string plain_bytes = plain_frame.bytes.ToString();
  EXPECT_EQ(RestampResult::kUnchanged, RestampTimeout(plain_frame, later));
  EXPECT_EQ(plain_bytes, plain_frame.bytes.ToString());
}

TEST(BaiduStdClientProtocol, ARequestThatWaitedTellsTheServerOnlyTheTimeoutLeft) {
  using Clock = std::chrono::steady_clock;
  ChannelOptions options = Options("baidu_std");
  options.deliver_timeout = true;
  Seam seam(options, "waits");
  ASSERT_NE(nullptr, seam.request) << seam.text;
  FakeConnection& connection = seam.connection;
  ClientSession* session = seam.session.get();

  // Queued behind a full socket: one with 5 s, one whose deadline passes while it waits, one
  // without a deadline.
  connection.Connect();
  connection.socket_unsent = BaiduStdClientSession::kHandOffWindow + 1;
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(5);
  seam.Submit(2, deadline);
  seam.Submit(3, Clock::now() + std::chrono::milliseconds(1));
  seam.Submit(4);
  EXPECT_TRUE(connection.written_ids.empty());
  EXPECT_EQ(seam.request_bytes, session->unsent_request_bytes());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));

  connection.socket_unsent = 0;
  const Clock::time_point before = Clock::now();
  session->Pump();
  const Clock::time_point after = Clock::now();
  // The expired one is dropped unsent (its call's deadline timer reports ERPCTIMEDOUT), and no
  // attempt is failed here.
  EXPECT_EQ((std::vector<int64_t>{2, 4}), connection.written_ids);
  EXPECT_TRUE(connection.failures.empty());
  EXPECT_FALSE(session->requests_waiting());
  EXPECT_EQ(0u, session->unsent_request_bytes());

  protocol::FrameDecoder decoder;
  protocol::Frame frame;
  ASSERT_EQ(protocol::DecodeStatus::kFrame, decoder.Next(connection.written, &frame));
  EXPECT_EQ(2, frame.meta.correlation_id());
  // The time left when it was handed over, not the 5000 ms it had when packed.
  auto left_ms = [&](Clock::time_point at) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - at).count();
  };
  EXPECT_LE(frame.meta.request().timeout_ms(), left_ms(before));
  EXPECT_GE(frame.meta.request().timeout_ms(), left_ms(after));
  EXPECT_LE(frame.meta.request().timeout_ms(), 4950);
  ASSERT_EQ(protocol::DecodeStatus::kFrame, decoder.Next(connection.written, &frame));
  EXPECT_EQ(4, frame.meta.correlation_id());
  EXPECT_FALSE(frame.meta.request().has_timeout_ms());
  EXPECT_TRUE(connection.written.empty());
}

TEST(GrpcClientProtocol, RefusesAnAttachmentAndPreparesNothing) {
  ChannelCore core(Options("grpc"), "127.0.0.1:8000");
  Controller controller;
  controller.request_attachment().Append("attached");
  int code = 0;
  std::string text;
  EXPECT_EQ(nullptr, Prepare(core, "x", controller, &code, &text));
  EXPECT_EQ(EREQUEST, code);
  EXPECT_NE(std::string::npos, text.find("attachment")) << text;
}

// Moves bytes from the client session (through the fake connection) to `server` and back.
void Exchange(FakeConnection& connection, ClientSession& session,
              protocol::h2::GrpcServerSession& server) {
  for (int round = 0; round < 100; ++round) {
    const bool to_server = !connection.written.empty();
    if (to_server) {
      ASSERT_TRUE(server.Receive(connection.written));
      connection.written.clear();
    }
    net::BufferChain to_client;
    server.TakeOutput(&to_client);
    if (!to_server && to_client.empty()) return;
    if (!to_client.empty()) {
      ASSERT_TRUE(session.OnInput(to_client));
    }
  }
}

TEST(GrpcClientProtocol, AStreamPerAttemptAndTheResponseCompletesIt) {
  ChannelCore core(Options("grpc"), "127.0.0.1:8000");
  ASSERT_EQ("grpc", core.protocol().name());
  Controller controller;
  controller.request_user_fields()["x-trace"] = "t1";
  int code = 0;
  std::string text;
  std::unique_ptr<ClientRequest> request = Prepare(core, "ping", controller, &code, &text);
  ASSERT_NE(nullptr, request) << text;

  FakeConnection connection;
  std::unique_ptr<ClientSession> session = core.protocol().NewSession(connection, core.options());
  AttemptFacts facts;
  facts.correlation_id = 7;
  facts.authority = "10.0.0.1:50051";
  facts.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  PackedRequest packed = request->Pack(facts);
  const protocol::h2::GrpcClientRequest& grpc_request = std::get<1>(packed);
  EXPECT_EQ("/example.EchoService/Echo", grpc_request.path);
  EXPECT_EQ("10.0.0.1:50051", grpc_request.authority);
  EXPECT_EQ(facts.deadline, grpc_request.deadline);  // grpc-timeout is stamped when it opens
  connection.awaited.push_back(7);
  session->Submit(7, std::move(packed));
  EXPECT_TRUE(connection.written_ids.empty());  // nothing goes out before the connect
  connection.Connect();
  session->OnConnected();
  EXPECT_EQ(std::vector<int64_t>{7}, connection.written_ids);  // its HEADERS are in the output

  protocol::h2::GrpcServerSession server{protocol::h2::GrpcServerSession::Limits{}};
  Exchange(connection, *session, server);
  protocol::h2::GrpcRequest received;
  ASSERT_TRUE(server.PopRequest(&received));
  EXPECT_EQ("/example.EchoService/Echo", received.path);
  EchoRequest sent;
  ASSERT_TRUE(sent.ParseFromString(received.message.ToString()));
  EXPECT_EQ("ping", sent.message());
  bool traced = false;
  for (auto& [name, value] : received.metadata) traced |= name == "x-trace" && value == "t1";
  EXPECT_TRUE(traced);

  EchoResponse response;
  response.set_message("pong");
  net::BufferChain message;
  message.Append(response.SerializeAsString());
  server.Respond(received.stream_id, std::move(message), false, {{"x-reply", "r1"}});
  Exchange(connection, *session, server);
  ASSERT_EQ(1u, connection.completions.size());
  Completion& completion = *connection.completions[0];
  EXPECT_EQ(7, completion.correlation_id);
  EXPECT_EQ(0, completion.server_error) << completion.text;
  EXPECT_EQ(0, completion.read_error) << completion.text;
  EXPECT_EQ("pong", completion.response.message());
  EXPECT_EQ("r1", completion.controller.response_user_fields().at("x-reply"));
  EXPECT_GT(connection.replies_read, 0);
}

TEST(GrpcClientProtocol, AFailedStatusIsTheServersErrorAndAnAbandonedAttemptNeverCompletes) {
  Seam seam("grpc", "x");
  ASSERT_NE(nullptr, seam.request) << seam.text;
  FakeConnection& connection = seam.connection;
  ClientSession* session = seam.session.get();
  connection.Connect();
  seam.Submit(11);
  seam.Submit(12);
  protocol::h2::GrpcServerSession server{protocol::h2::GrpcServerSession::Limits{}};
  Exchange(connection, *session, server);
  protocol::h2::GrpcRequest first, second;
  ASSERT_TRUE(server.PopRequest(&first));
  ASSERT_TRUE(server.PopRequest(&second));

  session->Abandon(12);  // RST_STREAM CANCEL: the server hears of it, the call never completes
  connection.awaited = {11};
  server.Fail(first.stream_id, protocol::h2::GrpcStatus::kResourceExhausted, "too busy");
  Exchange(connection, *session, server);
  EXPECT_EQ(std::vector<int32_t>{second.stream_id}, server.TakeCanceled());
  ASSERT_EQ(1u, connection.completions.size());
  EXPECT_EQ(11, connection.completions[0]->correlation_id);
  EXPECT_EQ(ELIMIT, connection.completions[0]->server_error);
  EXPECT_NE(std::string::npos, connection.completions[0]->text.find("too busy"));
  EXPECT_TRUE(connection.failures.empty());
}

}  // namespace
}  // namespace arenarpc::client
