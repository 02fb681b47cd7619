// What a channel bounds whatever its server does: unsent bytes per connection (EOVERCROWDED), no
// request sent after its call timed out or was cancelled, stuck connections (calls timing out in a
// row, a reply stalled mid-frame, requests the server never reads) closed and replaced, and the
// size a compressed reply may inflate to.
#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "arenarpc/error_codes.h"
#include "client_test_util.h"
#include "protocol/rpc_meta.pb.h"

namespace arenarpc::testing {
namespace {

using example::EchoRequest;
using example::EchoResponse;
using example::EchoService_Stub;
using std::chrono::milliseconds;

// The most one TCP connection's kernel buffers hold on this machine (send side + receive side).
size_t KernelBufferBound() {
  size_t total = 0;
  for (const char* path : {"/proc/sys/net/ipv4/tcp_wmem", "/proc/sys/net/ipv4/tcp_rmem"}) {
    std::ifstream in(path);
    size_t min = 0, def = 0, max = 0;
    in >> min >> def >> max;
    total += std::max<size_t>(max, 8u << 20);
  }
  return total;
}

// n asynchronous calls carrying `attachment_bytes` each; returns their controllers once all ended.
struct Batch {
  std::vector<std::unique_ptr<Controller>> controllers;
  std::vector<std::unique_ptr<EchoResponse>> responses;
  CountingDone done;
  EchoRequest request = Request("load");

  void Start(Channel& channel, int n, size_t attachment_bytes, int64_t timeout_ms) {
    const std::string attachment(attachment_bytes, 'a');
    for (int i = 0; i < n; ++i) {
      controllers.push_back(std::make_unique<Controller>());
      responses.push_back(std::make_unique<EchoResponse>());
      controllers.back()->set_timeout_ms(timeout_ms);
      controllers.back()->request_attachment().Append(attachment);
      EchoService_Stub(&channel).Echo(controllers.back().get(), &request, responses.back().get(),
                                      &done);
    }
  }
  int Count(int code) const {
    return static_cast<int>(std::count_if(controllers.begin(), controllers.end(),
                                          [code](const auto& c) { return c->ErrorCode() == code; }));
  }
};

TEST(ChannelBounds, UnsentBytesPerConnectionAreBoundedWithEovercrowded) {
  // The server never reads: the kernel buffers fill, then the channel's own queue.
  FakeServer stalled(EchoHandler(), FakeServer::Options{[](int) { return false; }});
  FakeServer good(EchoHandler());
  Channel channel, good_channel;
  ChannelOptions options = TestOptions();
  options.max_unwritten_bytes = 1u << 20;
  // Keep the stalled connection: this test is about the queue.
  options.write_timeout = std::chrono::milliseconds(-1);
  options.max_consecutive_timeouts = 0;
  ASSERT_EQ(channel.Init(stalled.address(), &options), 0);
  ChannelOptions good_options = TestOptions();
  ASSERT_EQ(good_channel.Init(good.address(), &good_options), 0);

  constexpr size_t kFrame = 256u << 10;
  const int n = static_cast<int>((KernelBufferBound() + (8u << 20)) / kFrame);
  Batch batch;
  batch.Start(channel, n, kFrame, 1000);
  // Meanwhile a good client on another channel keeps working.
  for (int i = 0; i < 20; ++i) {
    Controller cntl;
    EchoRequest request = Request("good");
    EchoResponse response;
    EchoService_Stub(&good_channel).Echo(&cntl, &request, &response, nullptr);
    ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
  }
  ASSERT_TRUE(batch.done.WaitForRuns(n, milliseconds(10000)));
  const int overcrowded = batch.Count(EOVERCROWDED);
  EXPECT_GT(overcrowded, 0);
  // Accepted requests fit in the kernel's buffers plus max_unwritten_bytes plus one frame.
  const size_t accepted_bytes = static_cast<size_t>(n - overcrowded) * kFrame;
  EXPECT_LE(accepted_bytes, KernelBufferBound() + options.max_unwritten_bytes + kFrame);
  for (const auto& cntl : batch.controllers) {
    if (cntl->ErrorCode() != EOVERCROWDED) continue;
    EXPECT_NE(cntl->ErrorText().find("max_unwritten_bytes=1048576"), std::string::npos)
        << cntl->ErrorText();
    EXPECT_EQ(cntl->retried_count(), 0);  // a single server: not retried on the same connection
    break;
  }
}

TEST(ChannelBounds, RequestsOfTimedOutOrCancelledCallsAreNotSent) {
  std::atomic<bool> reading{false};
  Parked parked;
  FakeServer server(parked.Handler(),
                    FakeServer::Options{[&reading](int) { return reading.load(); }});
  Channel channel;
  ChannelOptions options = TestOptions();
  options.write_timeout = std::chrono::milliseconds(-1);
  options.max_consecutive_timeouts = 0;
  ASSERT_EQ(channel.Init(server.address(), &options), 0);

  constexpr size_t kFrame = 256u << 10;
  const int n = static_cast<int>((KernelBufferBound() + (16u << 20)) / kFrame);
  Batch timed_out, cancelled;
  timed_out.Start(channel, n / 2, kFrame, 300);
  cancelled.Start(channel, n - n / 2, kFrame, 30000);
  std::this_thread::sleep_for(milliseconds(100));
  for (const auto& cntl : cancelled.controllers) StartCancel(cntl->call_id());
  ASSERT_TRUE(timed_out.done.WaitForRuns(n / 2));
  ASSERT_TRUE(cancelled.done.WaitForRuns(n - n / 2));
  EXPECT_EQ(timed_out.Count(ERPCTIMEDOUT), n / 2);
  EXPECT_EQ(cancelled.Count(ECANCELED), n - n / 2);

  // Now the server reads what reached the kernel; the rest was dropped unsent.
  reading = true;
  int received = -1;
  for (int stable = 0; stable < 5; std::this_thread::sleep_for(milliseconds(100))) {
    const int now = server.requests_received();
    stable = now == received ? stable + 1 : 0;
    received = now;
  }
  EXPECT_GT(received, 0);
  EXPECT_LE(static_cast<size_t>(received) * kFrame,
            KernelBufferBound() + 2 * (256u << 10) /* the socket's window + one frame */);
  EXPECT_LT(received, n);
  // The connection still works.
  reading = true;
  Controller cntl;
  EchoRequest request = Request("after");
  EchoResponse response;
  CountingDone done;
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, &done);
  ASSERT_TRUE(FakeServer::WaitFor([&] { return server.requests_received() == received + 1; }));
  parked.ReplyAll();
  ASSERT_TRUE(done.WaitForRuns(1));
  EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
}

TEST(ChannelBounds, AConnectionWhoseCallsKeepTimingOutIsReplaced) {
  // The first connection reads requests and never answers; later ones answer.
  FakeServer server(EchoAfterFirstConnection([](const auto&, FakeRequest&&) {}));
  Channel channel;
  ChannelOptions options = TestOptions();
  options.timeout_ms = 500;  // ThreadSanitizer builds: a good call takes well under this
  options.max_consecutive_timeouts = 3;
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoRequest request = Request("x");
  int timeouts = 0;
  bool ok = false;
  for (int i = 0; i < 10 && !ok; ++i) {
    Controller cntl;
    EchoResponse response;
    EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
    if (cntl.ErrorCode() == ERPCTIMEDOUT) ++timeouts;
    ok = !cntl.Failed();
    if (!ok && i >= 3) {
      ADD_FAILURE() << "call " << i << ": " << cntl.ErrorText() << " stuck="
                    << channel.stats().stuck_connections << " accepted=" << server.connections_accepted()
                    << " retried=" << cntl.retried_count();
    }
  }
  EXPECT_TRUE(ok);
  EXPECT_EQ(timeouts, 3);
  EXPECT_EQ(server.connections_accepted(), 2);
  EXPECT_EQ(channel.stats().stuck_connections, 1u);
  EXPECT_TRUE(FakeServer::WaitFor([&] { return server.connections_closed_by_peer() == 1; }));
}

TEST(ChannelBounds, AReplyStalledMidFrameClosesTheConnectionAfterReadTimeout) {
  FakeServer server(EchoAfterFirstConnection([](const std::shared_ptr<FakeConnection>& connection,
                                                FakeRequest&& request) {
    EchoRequest echo_request;
    ASSERT_TRUE(DecodeRequest(request, &echo_request));
    protocol::RpcMeta meta;
    meta.mutable_response()->set_error_code(0);
    meta.set_correlation_id(request.meta.correlation_id());
    const std::string frame =
        EncodeFakeFrame(meta, EchoOf(echo_request).SerializeAsString(), std::string(4096, 'p'));
    connection->SendRaw(std::string_view(frame).substr(0, frame.size() / 2));  // never the rest
  }));
  Channel channel;
  ChannelOptions options = TestOptions();
  options.timeout_ms = 5000;
  options.read_timeout = std::chrono::milliseconds(200);
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoRequest request = Request("x");
  Controller cntl;
  EchoResponse response;
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
  EXPECT_EQ(cntl.ErrorCode(), EFAILEDSOCKET) << cntl.ErrorText();
  EXPECT_NE(cntl.ErrorText().find("closed as stuck"), std::string::npos) << cntl.ErrorText();
  EXPECT_GE(cntl.latency_us(), 200'000);
  EXPECT_LT(cntl.latency_us(), 2'000'000);  // read_timeout + the watchdog's period, not 5 s
  Controller next;
  EchoService_Stub(&channel).Echo(&next, &request, &response, nullptr);
  EXPECT_FALSE(next.Failed()) << next.ErrorText();
  EXPECT_EQ(server.connections_accepted(), 2);
}

TEST(ChannelBounds, ARequestTheServerNeverReadsIsRetriedOnANewConnectionAfterWriteTimeout) {
  // Connection 0 is never read; a request larger than the kernel's buffers cannot be written.
  FakeServer server(EchoHandler(), FakeServer::Options{[](int index) { return index > 0; }});
  Channel channel;
  ChannelOptions options = TestOptions();
  // Under ThreadSanitizer, beside other tests on the same cores, writing the request twice has
  // taken more than 10 s, and a reading server's connection has gone 1 s without progress.
  options.timeout_ms = 60000;
  options.write_timeout = std::chrono::milliseconds(3000);
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  Controller cntl;
  cntl.request_attachment().Append(std::string(KernelBufferBound() + (4u << 20), 'w'));
  EchoRequest request = Request("big");
  EchoResponse response;
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
  EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(cntl.retried_count(), 1);  // the cut-off request was never complete: retried
  EXPECT_LT(cntl.latency_us(), 40'000'000);  // retried after the write timeout, not the call's
  EXPECT_EQ(channel.stats().stuck_connections, 1u);
  EXPECT_EQ(server.connections_accepted(), 2);
}

std::string GzipOfZeros(size_t n) {
  net::BufferChain plain, packed;
  EchoResponse response;
  response.set_message("m");
  response.set_blob(std::string(n, '\0'));
  plain.Append(response.SerializeAsString());
  std::string error;
  EXPECT_TRUE(protocol::Compress(2, plain, &packed, &error)) << error;
  return packed.ToString();
}

TEST(ChannelBounds, AReplyInflatesAtMostToMaxDecompressedSize) {
  const std::string packed = GzipOfZeros(4u << 20);
  FakeServer server([&packed](const std::shared_ptr<FakeConnection>& connection,
                              FakeRequest&& request) {
    connection->ReplyRaw(request.meta.correlation_id(), packed, {},
                         [](protocol::RpcMeta& meta) { meta.set_compress_type(2); });
  });
  EchoResponse full;
  full.set_message("m");
  full.set_blob(std::string(4u << 20, '\0'));
  const size_t inflated = full.ByteSizeLong();
  for (const size_t cap : {inflated - 1, inflated}) {
    Channel channel;
    ChannelOptions options = TestOptions();
    options.max_decompressed_size = cap;
    ASSERT_EQ(channel.Init(server.address(), &options), 0);
    Controller cntl;
    EchoRequest request = Request("x");
    EchoResponse response;
    EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
    if (cap < inflated) {
      EXPECT_EQ(cntl.ErrorCode(), EREQUEST) << cntl.ErrorText();
    } else {
      EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
      EXPECT_EQ(response.blob().size(), 4u << 20);
    }
  }
}

TEST(ChannelBounds, NewOptionsAreValidated) {
  Channel channel;
  ChannelOptions options;
  options.max_unwritten_bytes = 0;
  EXPECT_EQ(channel.Init("127.0.0.1:1", &options), -1);
  EXPECT_NE(channel.last_error().find("max_unwritten_bytes"), std::string::npos);
  options = {};
  options.read_timeout = std::chrono::milliseconds(0);
  EXPECT_EQ(channel.Init("127.0.0.1:1", &options), -1);
  options = {};
  options.health_check_path = "health";
  EXPECT_EQ(channel.Init("127.0.0.1:1", &options), -1);
  EXPECT_NE(channel.last_error().find("health_check_path"), std::string::npos);
  options = {};
  options.max_decompressed_size = 0;
  EXPECT_EQ(channel.Init("127.0.0.1:1", &options), -1);
}

}  // namespace
}  // namespace arenarpc::testing
