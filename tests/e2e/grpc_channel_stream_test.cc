// GrpcClientStream: a Channel with protocol "grpc" calling the streaming methods of an arenarpc
// server's GrpcStreamService — bidirectional echo with metadata both ways, a server stream of 1000
// messages, a client stream of 50, a reader that stalls (the server's writes stop at the window),
// cancellation, a deadline, an error status, a non-waiting writer, a message past max_body_size,
// pooled connections, and a stream opened from a handler fiber on a one-thread server (it must
// suspend, not block).
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/channel.h"
#include "arenarpc/error_codes.h"
#include "arenarpc/fiber.h"
#include "arenarpc/grpc_client_stream.h"
#include "arenarpc/grpc_stream.h"
#include "arenarpc/server.h"
#include "grpc_stream_test.pb.h"

namespace arenarpc::e2e {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kClientWindow = 64u << 10;    // grpc_stream_window of the stall test's channel
constexpr size_t kServerBuffered = 64u << 10;    // Push's max_buffered_bytes
constexpr int kPushBytes = 16u << 10;

const google::protobuf::MethodDescriptor* Method(const char* name) {
  return StreamService::descriptor()->FindMethodByName(name);
}

ChannelOptions StreamChannelOptions() {
  ChannelOptions options;
  options.protocol = "grpc";
  options.timeout_ms = 10000;
  return options;
}

// The unary method opens a client stream to Bidi on the same server, from its handler fiber.
class LoopbackUnary final : public StreamService {
 public:
  void Unary(google::protobuf::RpcController* controller, const StreamRequest* request,
             StreamReply* response, google::protobuf::Closure* done) override {
    Controller cntl;
    GrpcClientStream stream;
    if (stream.Open(*channel, Method("Bidi"), &cntl) == 0) {
      for (int i = 0; i < 3; ++i) {
        StreamRequest out;
        out.set_text(request->text() + std::to_string(i));
        StreamReply in;
        if (!stream.Write(out) || !stream.Read(&in)) break;
        response->set_text(response->text() + in.text() + ";");
      }
      stream.WritesDone();
    }
    response->set_index(stream.Finish());
    done->Run();
  }
  Channel* channel = nullptr;
};

class GrpcClientStreamTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    streams_ = new GrpcStreamService(StreamService::descriptor(), &unary_);
    ASSERT_EQ(0, streams_->AddMethod("Bidi", [](GrpcServerStream& stream) {
      auto& fields = stream.controller().request_user_fields();
      if (auto it = fields.find("x-user"); it != fields.end()) {
        stream.controller().response_user_fields()["x-stream"] = it->second + "-back";
      }
      GrpcStreamMessages m;
      for (int i = 0; stream.Read(&m); ++i) {
        m.response<StreamReply>().set_text(m.request<StreamRequest>().text());
        m.response<StreamReply>().set_index(i);
        if (!stream.Write(std::move(m))) return;
      }
      stream.AddTrailingMetadata("x-trailer", "t");
    }));
    ASSERT_EQ(0, streams_->AddMethod("ServerStream", [](GrpcServerStream& stream) {
      GrpcStreamMessages in;
      if (!stream.Read(&in)) return;
      const auto& request = in.request<StreamRequest>();
      for (int i = 0; i < request.count(); ++i) {
        GrpcStreamMessages out = stream.NewMessages();
        out.response<StreamReply>().set_index(i);
        out.response<StreamReply>().set_text(request.text());
        if (!stream.Write(std::move(out))) return;
      }
      if (request.fail_code() != 0) {
        stream.controller().SetFailed(request.fail_code(), request.text());
        // A google.rpc.Status{code: 7, message: text}, as a rich-status handler sets it.
        stream.controller().set_grpc_status_details("\x08\x07\x12" +
                                                    std::string(1, static_cast<char>(request.text().size())) +
                                                    request.text());
      }
    }));
    ASSERT_EQ(0, streams_->AddMethod("ClientStream", [](GrpcServerStream& stream) {
      GrpcStreamMessages in;
      int count = 0;
      int64_t sum = 0;
      while (stream.Read(&in)) ++count, sum += in.request<StreamRequest>().count();
      if (stream.controller().IsCanceled()) return;
      GrpcStreamMessages out = stream.NewMessages();
      out.response<StreamReply>().set_index(count);
      out.response<StreamReply>().set_text(std::to_string(sum));
      stream.Write(std::move(out));
    }));
    GrpcStreamMethodOptions push_options;
    push_options.max_buffered_bytes = kServerBuffered;
    ASSERT_EQ(0, streams_->AddMethod("Push", [](GrpcServerStream& stream) {
      GrpcStreamMessages in;
      if (!stream.Read(&in)) return;
      const auto request = in.request<StreamRequest>();
      for (int i = 0; request.count() < 0 || i < request.count(); ++i) {
        GrpcStreamMessages out = stream.NewMessages();
        out.response<StreamReply>().set_index(i);
        out.response<StreamReply>().set_payload(std::string(request.bytes(), 'p'));
        if (!stream.Write(std::move(out))) break;
        pushed_.fetch_add(1);
        if (request.delay_ms() > 0) fiber::SleepFor(std::chrono::milliseconds(request.delay_ms()));
      }
      if (stream.controller().IsCanceled()) push_canceled_.fetch_add(1);
    }, push_options));
    server_ = new Server;
    ASSERT_EQ(0, server_->AddService(streams_, SERVER_DOESNT_OWN_SERVICE));
    ServerOptions options;
    options.num_threads = 1;  // the loopback test needs the handler fiber to suspend
    ASSERT_EQ(0, server_->Start("127.0.0.1:0", options)) << server_->last_error();
    address_ = "127.0.0.1:" + std::to_string(server_->listen_port());
    channel_ = new Channel;
    const ChannelOptions channel_options = StreamChannelOptions();
    ASSERT_EQ(0, channel_->Init(address_, &channel_options)) << channel_->last_error();
    unary_.channel = channel_;
  }
  static void TearDownTestSuite() {
    delete channel_;
    server_->Stop();
    server_->Join();
    delete server_;
    delete streams_;
  }

  static inline LoopbackUnary unary_;
  static inline GrpcStreamService* streams_ = nullptr;
  static inline Server* server_ = nullptr;
  static inline Channel* channel_ = nullptr;
  static inline std::string address_;
  static inline std::atomic<int> pushed_{0};
  static inline std::atomic<int> push_canceled_{0};
};

TEST_F(GrpcClientStreamTest, BidiEchoWithMetadataBothWays) {
  Controller cntl;
  cntl.request_user_fields()["x-user"] = "alice";
  GrpcClientStream stream;
  ASSERT_EQ(0, stream.Open(*channel_, Method("Bidi"), &cntl));
  for (int i = 0; i < 20; ++i) {  // one in, one out: the exchange interleaves
    StreamRequest request;
    request.set_text("m" + std::to_string(i));
    ASSERT_TRUE(stream.Write(request));
    StreamReply reply;
    ASSERT_TRUE(stream.Read(&reply)) << i;
    EXPECT_EQ("m" + std::to_string(i), reply.text());
    EXPECT_EQ(i, reply.index());
  }
  EXPECT_TRUE(stream.WritesDone());
  EXPECT_FALSE(stream.WritesDone());
  StreamRequest late;
  EXPECT_FALSE(stream.Write(late));
  StreamReply none;
  EXPECT_FALSE(stream.Read(&none));
  EXPECT_EQ(0, stream.Finish()) << cntl.ErrorText();
  EXPECT_EQ(0, stream.Finish());  // idempotent
  EXPECT_EQ("alice-back", cntl.response_user_fields()["x-stream"]);
  EXPECT_EQ("t", cntl.response_user_fields()["x-trailer"]);
  EXPECT_EQ(address_, cntl.remote_side());
}

TEST_F(GrpcClientStreamTest, ServerStreamOfAThousandAndClientStreamOfFifty) {
  {
    Controller cntl;
    GrpcClientStream stream;
    ASSERT_EQ(0, stream.Open(*channel_, Method("ServerStream"), &cntl));
    StreamRequest request;
    request.set_count(1000);
    request.set_text("s");
    ASSERT_TRUE(stream.Write(request));
    ASSERT_TRUE(stream.WritesDone());
    StreamReply reply;
    int n = 0;
    while (stream.Read(&reply)) {
      ASSERT_EQ(n, reply.index());
      ++n;
    }
    EXPECT_EQ(1000, n);
    EXPECT_EQ(0, stream.Finish()) << cntl.ErrorText();
  }
  {
    Controller cntl;
    GrpcClientStream stream;
    ASSERT_EQ(0, stream.Open(*channel_, Method("ClientStream"), &cntl));
    for (int i = 1; i <= 50; ++i) {
      StreamRequest request;
      request.set_count(i);
      ASSERT_TRUE(stream.Write(request));
    }
    ASSERT_TRUE(stream.WritesDone());
    StreamReply reply;
    ASSERT_TRUE(stream.Read(&reply));
    EXPECT_EQ(50, reply.index());
    EXPECT_EQ(std::to_string(50 * 51 / 2), reply.text());
    EXPECT_FALSE(stream.Read(&reply));
    EXPECT_EQ(0, stream.Finish()) << cntl.ErrorText();
  }
}

TEST_F(GrpcClientStreamTest, ServerErrorStatusAfterMessages) {
  Controller cntl;
  GrpcClientStream stream;
  ASSERT_EQ(0, stream.Open(*channel_, Method("ServerStream"), &cntl));
  StreamRequest request;
  request.set_count(3);
  request.set_fail_code(EPERM);
  request.set_text("not allowed");
  ASSERT_TRUE(stream.Write(request));
  StreamReply reply;
  int n = 0;
  while (stream.Read(&reply)) ++n;
  EXPECT_EQ(3, n);
  EXPECT_EQ(EPERM, stream.Finish());  // PERMISSION_DENIED back to EPERM, as for unary calls
  EXPECT_NE(std::string::npos, cntl.ErrorText().find("not allowed")) << cntl.ErrorText();
  EXPECT_NE(std::string::npos, cntl.ErrorText().find("grpc-status 7")) << cntl.ErrorText();
  EXPECT_EQ(std::string("\x08\x07\x12\x0bnot allowed"), cntl.grpc_status_details())
      << "grpc-status-details-bin reaches the caller's controller";
}

// A reader that stops: the server's writes stop once the client's stream window (not reopened
// while a message waits unread) and the server's own buffer are full; then everything arrives.
TEST_F(GrpcClientStreamTest, StalledReaderBoundsTheServerByTheWindow) {
  ChannelOptions options = StreamChannelOptions();
  options.grpc_stream_window = kClientWindow;
  Channel channel;
  ASSERT_EQ(0, channel.Init(address_, &options));
  pushed_ = 0;
  Controller cntl;
  GrpcClientStream stream;
  ASSERT_EQ(0, stream.Open(channel, Method("Push"), &cntl));
  StreamRequest request;
  request.set_count(200);
  request.set_bytes(kPushBytes);
  ASSERT_TRUE(stream.Write(request));
  StreamReply reply;
  ASSERT_TRUE(stream.Read(&reply));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // stalled: nothing read
  // window + one message held here, the server's buffer + one message, one in its hands.
  const int bound = static_cast<int>((kClientWindow + kServerBuffered) / kPushBytes) + 4;
  const int while_stalled = pushed_.load();
  EXPECT_LE(while_stalled, bound) << "pushed while stalled";
  RecordProperty("pushed_while_stalled", while_stalled);
  EXPECT_GE(while_stalled, 4);  // it did get going
  int n = 1;
  while (stream.Read(&reply)) {
    ASSERT_EQ(n, reply.index());
    ASSERT_EQ(static_cast<size_t>(kPushBytes), reply.payload().size());
    ++n;
  }
  EXPECT_EQ(200, n);
  EXPECT_EQ(0, stream.Finish()) << cntl.ErrorText();
}

// Streams whose readers stall leave the channel working: 4 Push streams on one connection that
// never read past their first message hold at most their windows (the server's writes stop),
// while another stream on the same channel receives 200 messages and a unary call completes.
// Each stalled stream holds its window + one message here (docs/grpc.md "Flow control").
TEST_F(GrpcClientStreamTest, StalledReadersLeaveTheChannelWorking) {
  ChannelOptions options = StreamChannelOptions();
  options.grpc_stream_window = kClientWindow;
  options.grpc_connection_window = 1u << 20;
  Channel channel;
  ASSERT_EQ(0, channel.Init(address_, &options));
  pushed_ = 0;
  push_canceled_ = 0;
  constexpr int kStalled = 4;
  std::vector<std::unique_ptr<GrpcClientStream>> stalled;
  std::vector<std::unique_ptr<Controller>> controllers;
  for (int i = 0; i < kStalled; ++i) {
    controllers.push_back(std::make_unique<Controller>());
    stalled.push_back(std::make_unique<GrpcClientStream>());
    ASSERT_EQ(0, stalled.back()->Open(channel, Method("Push"), controllers.back().get()));
    StreamRequest request;
    request.set_count(-1);  // until canceled
    request.set_bytes(kPushBytes);
    ASSERT_TRUE(stalled.back()->Write(request));
    StreamReply reply;
    ASSERT_TRUE(stalled.back()->Read(&reply));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // stalled: nothing read
  // Per stream: window + one message here, the server's buffer + one message, one in its hands.
  const int per_stream = static_cast<int>((kClientWindow + kServerBuffered) / kPushBytes) + 4;
  const int while_stalled = pushed_.load();
  EXPECT_LE(while_stalled, kStalled * per_stream);
  EXPECT_GE(while_stalled, kStalled * 4);  // each did get going
  RecordProperty("pushed_while_stalled", while_stalled);
  {
    Controller cntl;
    GrpcClientStream other;
    ASSERT_EQ(0, other.Open(channel, Method("ServerStream"), &cntl));
    StreamRequest request;
    request.set_count(200);
    request.set_text(std::string(4000, 'o'));
    ASSERT_TRUE(other.Write(request));
    ASSERT_TRUE(other.WritesDone());
    StreamReply reply;
    int n = 0;
    for (; other.Read(&reply) && reply.index() == n; ++n) {
    }
    EXPECT_EQ(200, n) << "the other stream's replies in order";
    EXPECT_EQ(0, other.Finish()) << cntl.ErrorText();
  }
  EXPECT_LE(pushed_.load(), kStalled * per_stream);  // still stalled meanwhile
  for (auto& stream : stalled) stream->StartCancel();
  for (auto& stream : stalled) EXPECT_NE(0, stream->Finish());
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(5);
  while (push_canceled_.load() < kStalled && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(kStalled, push_canceled_.load());
}

TEST_F(GrpcClientStreamTest, CancelAndDeadlineResetTheStream) {
  const int canceled_before = push_canceled_.load();
  {
    Controller cntl;
    GrpcClientStream stream;
    ASSERT_EQ(0, stream.Open(*channel_, Method("Push"), &cntl));
    StreamRequest request;
    request.set_count(-1);
    request.set_delay_ms(1);
    ASSERT_TRUE(stream.Write(request));
    StreamReply reply;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(stream.Read(&reply));
    stream.StartCancel();
    while (stream.Read(&reply)) {
    }
    EXPECT_EQ(ECANCELED, stream.Finish());
    EXPECT_FALSE(stream.Write(request));
  }
  {
    Controller cntl;
    cntl.set_timeout_ms(200);
    GrpcClientStream stream;
    const Clock::time_point start = Clock::now();
    ASSERT_EQ(0, stream.Open(*channel_, Method("Push"), &cntl));
    StreamRequest request;
    request.set_count(-1);
    request.set_delay_ms(5);
    ASSERT_TRUE(stream.Write(request));
    StreamReply reply;
    int n = 0;
    while (stream.Read(&reply)) ++n;
    EXPECT_GT(n, 0);
    EXPECT_EQ(ERPCTIMEDOUT, stream.Finish()) << cntl.ErrorText();
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  }
  // Both server handlers saw the RST_STREAM (or their deadline) and stopped.
  const Clock::time_point until = Clock::now() + std::chrono::seconds(5);
  while (push_canceled_.load() < canceled_before + 2 && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(canceled_before + 2, push_canceled_.load());
}

// TryWrite never waits: Push reads one message and then only writes, so the request side
// stops at the server's window and this stream's buffer; then EAGAIN.
TEST_F(GrpcClientStreamTest, TryWriteSaysEagainWhenTheBufferIsFull) {
  Controller cntl;
  GrpcClientStream stream;
  GrpcClientStreamOptions options;
  options.max_buffered_bytes = 32u << 10;
  ASSERT_EQ(0, stream.Open(*channel_, Method("Push"), &cntl, options));
  StreamRequest request;
  request.set_count(-1);
  request.set_delay_ms(1);
  ASSERT_EQ(0, stream.TryWrite(request));
  request.set_text(std::string(16u << 10, 'x'));
  int rc = 0, sent = 0;
  const Clock::time_point until = Clock::now() + std::chrono::seconds(5);
  while (sent < 1000 && Clock::now() < until) {
    rc = stream.TryWrite(request);
    if (rc == 0) {
      ++sent;
    } else if (rc == EAGAIN) {  // the loop may still move bytes out: wait once, then insist
      if (stream.WaitWritable(Clock::now() + std::chrono::milliseconds(50)) == ETIMEDOUT) break;
    } else {
      break;
    }
  }
  EXPECT_EQ(EAGAIN, rc);
  EXPECT_LT(sent, 1000);  // 16 MB never went into the buffer
  EXPECT_EQ(ETIMEDOUT, stream.WaitWritable(Clock::now() + std::chrono::milliseconds(10)));
  stream.StartCancel();
  EXPECT_EQ(ECANCELED, stream.WaitWritable(Clock::now() + std::chrono::seconds(1)));
  EXPECT_EQ(ECANCELED, stream.TryWrite(request));
  EXPECT_EQ(ECANCELED, stream.Finish());
}

TEST_F(GrpcClientStreamTest, StreamFromAHandlerFiberSuspendsIt) {
  Channel channel;
  ChannelOptions options = StreamChannelOptions();
  ASSERT_EQ(0, channel.Init(address_, &options));
  StreamService_Stub stub(&channel);
  Controller cntl;
  StreamRequest request;
  request.set_text("f");
  StreamReply reply;
  stub.Unary(&cntl, &request, &reply, nullptr);
  ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ("f0;f1;f2;", reply.text());
  EXPECT_EQ(0, reply.index());  // the inner stream's Finish()
}

// A response message past max_body_size ends its stream (ERESPONSE, RST_STREAM) from its prefix;
// the connection and the other streams on it go on.
TEST_F(GrpcClientStreamTest, MessagePastMaxBodySizeFailsOnlyItsStream) {
  ChannelOptions options = StreamChannelOptions();
  options.max_body_size = 64u << 10;
  Channel channel;
  ASSERT_EQ(0, channel.Init(address_, &options));
  Controller good_cntl;
  GrpcClientStream good;  // open on the same connection all along
  ASSERT_EQ(0, good.Open(channel, Method("Bidi"), &good_cntl));
  Controller cntl;
  GrpcClientStream stream;
  ASSERT_EQ(0, stream.Open(channel, Method("Push"), &cntl));
  StreamRequest request;
  request.set_count(3);
  request.set_bytes(100u << 10);
  ASSERT_TRUE(stream.Write(request));
  StreamReply reply;
  EXPECT_FALSE(stream.Read(&reply));
  EXPECT_EQ(ERESPONSE, stream.Finish());
  EXPECT_NE(std::string::npos, cntl.ErrorText().find("max_body_size")) << cntl.ErrorText();
  for (int i = 0; i < 5; ++i) {
    StreamRequest echo;
    echo.set_text("still " + std::to_string(i));
    ASSERT_TRUE(good.Write(echo));
    ASSERT_TRUE(good.Read(&reply));
    EXPECT_EQ(echo.text(), reply.text());
  }
  good.WritesDone();
  EXPECT_EQ(0, good.Finish()) << good_cntl.ErrorText();
  EXPECT_EQ(1u, channel.stats().connections_opened);
}

// connection_type "pooled": a stream holds its connection alone until it ends, then the
// connection goes back to the pool for the next stream or call.
TEST_F(GrpcClientStreamTest, PooledConnectionsCarryOneStreamAtATime) {
  ChannelOptions options = StreamChannelOptions();
  options.connection_type = "pooled";
  Channel channel;
  ASSERT_EQ(0, channel.Init(address_, &options));
  const auto echo_once = [&](GrpcClientStream& stream, Controller& cntl, const std::string& text) {
    ASSERT_EQ(0, stream.Open(channel, Method("Bidi"), &cntl));
    StreamRequest request;
    request.set_text(text);
    ASSERT_TRUE(stream.Write(request));
    StreamReply reply;
    ASSERT_TRUE(stream.Read(&reply));
    EXPECT_EQ(text, reply.text());
  };
  {
    Controller c1, c2;
    GrpcClientStream s1, s2;
    echo_once(s1, c1, "one");
    echo_once(s2, c2, "two");  // s1 still holds its connection: a second one opens
    EXPECT_EQ(2u, channel.stats().connections_opened);
    s1.WritesDone();
    s2.WritesDone();
    EXPECT_EQ(0, s1.Finish()) << c1.ErrorText();
    EXPECT_EQ(0, s2.Finish()) << c2.ErrorText();
  }
  for (int i = 0; i < 3; ++i) {  // both went back to the pool: no new connection
    Controller cntl;
    GrpcClientStream stream;
    echo_once(stream, cntl, "again");
    stream.WritesDone();
    EXPECT_EQ(0, stream.Finish()) << cntl.ErrorText();
  }
  EXPECT_EQ(2u, channel.stats().connections_opened);
}

TEST(GrpcClientStreamOpen, RefusesANonGrpcChannel) {
  Channel channel;
  ASSERT_EQ(0, channel.Init("127.0.0.1:1", nullptr));
  Controller cntl;
  GrpcClientStream stream;
  EXPECT_EQ(EINVAL, stream.Open(channel, Method("Bidi"), &cntl));
  EXPECT_TRUE(cntl.Failed());
  EXPECT_EQ(EINVAL, stream.Finish());
  StreamReply reply;
  EXPECT_FALSE(stream.Read(&reply));
}

}  // namespace
}  // namespace arenarpc::e2e
