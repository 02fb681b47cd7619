// Failure paths against FakeServer: timeouts and late replies, retries (connect refused, broken
// before the request was written) and no retry once it was, broken connections failing every
// pending call, garbage from the server, pooled and short connections, shutdown.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <thread>
#include <vector>

#include "client_test_util.h"

namespace arenarpc::testing {
namespace {

using example::EchoRequest;
using example::EchoResponse;
using example::EchoService_Stub;
using std::chrono::milliseconds;

TEST(ChannelTimeout, LateReplyIsDroppedAndCountedWithoutTouchingTheResponse) {
  Parked parked;
  FakeServer server(parked.Handler());
  Channel channel;
  ChannelOptions options = TestOptions();
  options.timeout_ms = 100;
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  Controller cntl;
  EchoRequest request = Request("slow");
  EchoResponse response;
  response.set_message("untouched");
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
  EXPECT_EQ(cntl.ErrorCode(), ERPCTIMEDOUT);
  EXPECT_NE(cntl.ErrorText().find("[E1008]Reached timeout=100ms"), std::string::npos)
      << cntl.ErrorText();
  EXPECT_GE(cntl.latency_us(), 100'000);
  EXPECT_EQ(cntl.retried_count(), 0);  // never retried after a timeout
  ASSERT_EQ(parked.size(), 1u);
  parked.ReplyAll();
  ASSERT_TRUE(FakeServer::WaitFor([&] { return channel.dropped_responses() == 1; }));
  EXPECT_EQ(response.message(), "untouched");
  EXPECT_EQ(channel.stats().timeouts, 1u);
  // The single connection survived the timeout and serves the next call.
  Controller next;
  CountingDone done;
  EchoService_Stub(&channel).Echo(&next, &request, &response, &done);
  ASSERT_TRUE(FakeServer::WaitFor([&] { return parked.size() == 1; }));
  parked.ReplyAll();
  ASSERT_TRUE(done.WaitForRuns(1));
  EXPECT_FALSE(next.Failed()) << next.ErrorText();
  EXPECT_EQ(response.message(), "slow");
  EXPECT_EQ(server.connections_accepted(), 1);
}

// The caller frees controller and response as soon as it hears of the timeout; the late reply
// must not touch them (AddressSanitizer would report a use after free).
TEST(ChannelTimeout, AsyncCallerMayFreeEverythingOnTimeout) {
  Parked parked;
  FakeServer server(parked.Handler());
  Channel channel;
  ChannelOptions options = TestOptions();
  options.timeout_ms = 50;
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  struct CallState {
    Controller cntl;
    EchoRequest request;
    EchoResponse response;
  };
  std::atomic<int> failed{0};
  constexpr int kCalls = 8;
  for (int i = 0; i < kCalls; ++i) {
    auto* state = new CallState;
    state->request.set_message("m" + std::to_string(i));
    EchoService_Stub(&channel).Echo(
        &state->cntl, &state->request, &state->response,
        google::protobuf::NewCallback(+[](CallState* s, std::atomic<int>* failed_count) {
          if (s->cntl.ErrorCode() == ERPCTIMEDOUT) failed_count->fetch_add(1);
          delete s;
        }, state, &failed));
  }
  ASSERT_TRUE(FakeServer::WaitFor([&] { return failed.load() == kCalls; }));
  ASSERT_TRUE(FakeServer::WaitFor([&] { return parked.size() == kCalls; }));
  parked.ReplyAll();
  ASSERT_TRUE(FakeServer::WaitFor([&] { return channel.dropped_responses() == kCalls; }));
}

TEST(ChannelTimeout, PerCallTimeoutOverridesTheChannels) {
  Parked parked;
  FakeServer server(parked.Handler());
  Channel channel;
  ChannelOptions options = TestOptions();  // 2 s
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  Controller cntl;
  cntl.set_timeout_ms(30);
  EchoRequest request = Request("x");
  EchoResponse response;
  const auto start = std::chrono::steady_clock::now();
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
  EXPECT_EQ(cntl.ErrorCode(), ERPCTIMEDOUT);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1500));
}

TEST(ChannelRetry, ConnectRefusedIsRetriedThenFails) {
  Channel channel;
  ChannelOptions options = TestOptions();
  options.max_retry = 2;
  ASSERT_EQ(channel.Init("127.0.0.1:" + std::to_string(UnusedPort()), &options), 0);
  EchoService_Stub stub(&channel);
  Controller cntl;
  EchoRequest request = Request("x");
  EchoResponse response;
  stub.Echo(&cntl, &request, &response, nullptr);
  EXPECT_EQ(cntl.ErrorCode(), ECONNREFUSED);
  EXPECT_NE(cntl.ErrorText().find("Fail to connect"), std::string::npos) << cntl.ErrorText();
  EXPECT_EQ(cntl.retried_count(), 2);
  EXPECT_EQ(channel.stats().retries, 2u);
  EXPECT_EQ(channel.stats().connections_failed, 3u);

  Controller no_retry;
  no_retry.set_max_retry(0);
  stub.Echo(&no_retry, &request, &response, nullptr);
  EXPECT_EQ(no_retry.ErrorCode(), ECONNREFUSED);
  EXPECT_EQ(no_retry.retried_count(), 0);
  EXPECT_EQ(channel.stats().connections_failed, 4u);
}

// A listener whose accept queue is full drops SYNs, so connects hang until the connect timeout.
TEST(ChannelRetry, ConnectTimeoutIsRetriedThenFailsWithEtimedout) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 0), 0);
  socklen_t len = sizeof addr;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  std::vector<int> fillers;
  for (int i = 0; i < 3; ++i) {  // fill the (never accepted) queue
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    fillers.push_back(fd);
  }
  std::this_thread::sleep_for(milliseconds(50));
  Channel channel;
  ChannelOptions options = TestOptions();
  options.connect_timeout_ms = 100;
  options.max_retry = 1;
  ASSERT_EQ(channel.Init("127.0.0.1:" + std::to_string(ntohs(addr.sin_port)), &options), 0);
  Controller cntl;
  EchoRequest request = Request("x");
  EchoResponse response;
  const auto start = std::chrono::steady_clock::now();
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
  const auto took = std::chrono::steady_clock::now() - start;
  for (int fd : fillers) ::close(fd);
  ::close(listener);
  EXPECT_EQ(cntl.ErrorCode(), ETIMEDOUT) << cntl.ErrorText();
  EXPECT_NE(cntl.ErrorText().find("timeout=100ms"), std::string::npos) << cntl.ErrorText();
  EXPECT_EQ(cntl.retried_count(), 1);
  EXPECT_GE(took, milliseconds(200));  // two connect timeouts, well before the call's 2 s
  EXPECT_LT(took, milliseconds(1900));
}

// The first connection is never read, so a large request cannot be written completely; then it
// is reset. The request was not sent: it is retried on a new connection and succeeds.
TEST(ChannelRetry, BrokenBeforeTheRequestWasWrittenIsRetried) {
  FakeServer::Options server_options;
  server_options.read_requests = [](int index) { return index > 0; };
  std::atomic<size_t> blob_size{0};
  FakeServer server(
      [&blob_size](const std::shared_ptr<FakeConnection>& connection, FakeRequest&& r) {
        EchoRequest request;
        ASSERT_TRUE(DecodeRequest(r, &request));
        blob_size = request.blob().size();
        EchoResponse response;  // no blob back: keeps the test fast under sanitizers
        response.set_message(request.message());
        connection->Reply(r, response);
      },
      server_options);
  Channel channel;
  ChannelOptions options = TestOptions();
  options.timeout_ms = 20000;
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  Controller cntl;
  EchoRequest request = Request("big");
  // Beyond what an unread loopback connection buffers (4 MiB send buffer + the peer's window).
  request.set_blob(std::string(12u << 20, 'b'));
  EchoResponse response;
  CountingDone done;
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, &done);
  ASSERT_TRUE(FakeServer::WaitFor([&] { return server.connections_accepted() == 1; }));
  std::this_thread::sleep_for(milliseconds(100));  // let the client fill the socket buffers
  server.connection(0)->Reset();
  ASSERT_TRUE(done.WaitForRuns(1, std::chrono::seconds(20)));
  ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(cntl.retried_count(), 1);
  EXPECT_EQ(response.message(), "big");
  EXPECT_EQ(blob_size.load(), request.blob().size());
  EXPECT_EQ(server.connections_accepted(), 2);
  EXPECT_EQ(server.requests_received(), 1);
}

// The request reached the server, then the connection broke: it may have run, so it is not sent
// again (at-most-once) and fails with the connection's error.
TEST(ChannelRetry, NoRetryOnceTheRequestWasSent) {
  FakeServer server([](const std::shared_ptr<FakeConnection>& connection, FakeRequest&&) {
    connection->Close();
  });
  Channel channel;
  ChannelOptions options = TestOptions();
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  Controller cntl;
  EchoRequest request = Request("x");
  EchoResponse response;
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
  EXPECT_EQ(cntl.ErrorCode(), EEOF);
  EXPECT_NE(cntl.ErrorText().find("[E1014]Got EOF"), std::string::npos) << cntl.ErrorText();
  EXPECT_EQ(cntl.retried_count(), 0);
  EXPECT_EQ(server.requests_received(), 1);
  EXPECT_EQ(server.connections_accepted(), 1);
}

TEST(ChannelBroken, ResetFailsEveryPendingCallAtOnceThenReconnects) {
  Parked parked;
  FakeServer server(parked.Handler());
  Channel channel;
  ChannelOptions options = TestOptions();
  options.timeout_ms = 10000;
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoService_Stub stub(&channel);
  constexpr int kCalls = 5;
  std::vector<std::unique_ptr<Controller>> cntls;
  std::vector<EchoRequest> requests(kCalls);
  std::vector<EchoResponse> responses(kCalls);
  CountingDone done;
  for (int i = 0; i < kCalls; ++i) {
    cntls.push_back(std::make_unique<Controller>());
    requests[i].set_message("p" + std::to_string(i));
    stub.Echo(cntls[i].get(), &requests[i], &responses[i], &done);
  }
  ASSERT_TRUE(FakeServer::WaitFor([&] { return parked.size() == kCalls; }));
  const auto start = std::chrono::steady_clock::now();
  server.connection(0)->Reset();
  ASSERT_TRUE(done.WaitForRuns(kCalls));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));  // not the timeout
  for (const auto& cntl : cntls) {
    EXPECT_TRUE(cntl->ErrorCode() == ECONNRESET || cntl->ErrorCode() == EEOF)
        << cntl->ErrorCode() << " " << cntl->ErrorText();
    EXPECT_EQ(cntl->retried_count(), 0);  // all were sent
  }
  // The next call opens a new connection.
  Controller cntl;
  EchoResponse response;
  CountingDone next;
  stub.Echo(&cntl, &requests[0], &response, &next);
  ASSERT_TRUE(FakeServer::WaitFor([&] { return parked.size() == kCalls + 1; }));
  parked.ReplyAll();
  ASSERT_TRUE(next.WaitForRuns(1));
  EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(server.connections_accepted(), 2);
}

TEST(ChannelBroken, GarbageFromTheServerFailsPendingCallsWithEinval) {
  FakeServer server([](const std::shared_ptr<FakeConnection>& connection, FakeRequest&&) {
    connection->SendRaw("HTTP/1.1 200 OK\r\n\r\n");
  });
  Channel channel;
  ChannelOptions options = TestOptions();
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  Controller cntl;
  EchoRequest request = Request("x");
  EchoResponse response;
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
  EXPECT_EQ(cntl.ErrorCode(), EINVAL);
  EXPECT_NE(cntl.ErrorText().find("bad magic"), std::string::npos) << cntl.ErrorText();
  EXPECT_TRUE(FakeServer::WaitFor([&] { return server.connections_closed_by_peer() == 1; }));
}

TEST(ChannelBroken, UnknownCorrelationIdIsDroppedAndCounted) {
  FakeServer server([](const std::shared_ptr<FakeConnection>& connection, FakeRequest&& r) {
    EchoRequest request;
    ASSERT_TRUE(DecodeRequest(r, &request));
    connection->ReplyRaw(r.meta.correlation_id() + 12345, EchoOf(request).SerializeAsString(), {});
    connection->Reply(r, EchoOf(request));
  });
  Channel channel;
  ChannelOptions options = TestOptions();
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  Controller cntl;
  EchoRequest request = Request("x");
  EchoResponse response;
  EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
  ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(channel.dropped_responses(), 1u);
}

TEST(ChannelPooled, SequentialCallsReuseOneConnection) {
  FakeServer server(EchoHandler());
  Channel channel;
  ChannelOptions options = TestOptions("pooled");
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoService_Stub stub(&channel);
  for (int i = 0; i < 5; ++i) {
    Controller cntl;
    EchoRequest request = Request("s" + std::to_string(i));
    EchoResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
    EXPECT_EQ(response.message(), request.message());
  }
  EXPECT_EQ(server.connections_accepted(), 1);
}

TEST(ChannelPooled, AtMostOneCallPerConnection) {
  std::mutex mutex;
  std::map<int, int> in_flight;
  int max_in_flight = 0;
  FakeServer server([&](const std::shared_ptr<FakeConnection>& connection, FakeRequest&& r) {
    {
      std::lock_guard lock(mutex);
      max_in_flight = std::max(max_in_flight, ++in_flight[connection->index()]);
    }
    std::this_thread::sleep_for(milliseconds(5));
    EchoRequest request;
    ASSERT_TRUE(DecodeRequest(r, &request));
    {
      std::lock_guard lock(mutex);
      --in_flight[connection->index()];
    }
    connection->Reply(r, EchoOf(request));
  });
  Channel channel;
  ChannelOptions options = TestOptions("pooled");
  options.io_threads = 2;
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoService_Stub stub(&channel);
  constexpr int kCalls = 16;
  std::vector<Controller> cntls(kCalls);
  std::vector<EchoRequest> requests(kCalls);
  std::vector<EchoResponse> responses(kCalls);
  CountingDone done;
  for (int i = 0; i < kCalls; ++i) {
    requests[i].set_message("c" + std::to_string(i));
    stub.Echo(&cntls[i], &requests[i], &responses[i], &done);
  }
  ASSERT_TRUE(done.WaitForRuns(kCalls));
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_FALSE(cntls[i].Failed()) << cntls[i].ErrorText();
    EXPECT_EQ(responses[i].message(), requests[i].message());
  }
  EXPECT_EQ(max_in_flight, 1);
  EXPECT_GT(server.connections_accepted(), 1);
  EXPECT_LE(server.connections_accepted(), kCalls);
}

TEST(ChannelPooled, ConnectionWhoseCallTimedOutIsClosed) {
  FakeServer server([](const std::shared_ptr<FakeConnection>& connection, FakeRequest&& r) {
    if (connection->index() == 0) return;  // never answers on the first connection
    EchoRequest request;
    ASSERT_TRUE(DecodeRequest(r, &request));
    connection->Reply(r, EchoOf(request));
  });
  Channel channel;
  ChannelOptions options = TestOptions("pooled");
  options.timeout_ms = 50;
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoService_Stub stub(&channel);
  Controller timed_out;
  EchoRequest request = Request("x");
  EchoResponse response;
  stub.Echo(&timed_out, &request, &response, nullptr);
  EXPECT_EQ(timed_out.ErrorCode(), ERPCTIMEDOUT);
  ASSERT_TRUE(FakeServer::WaitFor([&] { return server.connection(0)->peer_closed(); }));
  Controller cntl;
  cntl.set_timeout_ms(10000);  // answered: the channel's 50 ms is too short on a loaded machine
  stub.Echo(&cntl, &request, &response, nullptr);
  ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(server.connections_accepted(), 2);
}

TEST(ChannelShort, OneConnectionPerCallClosedAfterIt) {
  FakeServer server(EchoHandler());
  Channel channel;
  ChannelOptions options = TestOptions("short");
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoService_Stub stub(&channel);
  for (int i = 0; i < 3; ++i) {
    Controller cntl;
    EchoRequest request = Request("s");
    EchoResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
  }
  EXPECT_EQ(server.connections_accepted(), 3);
  EXPECT_TRUE(FakeServer::WaitFor([&] { return server.connections_closed_by_peer() == 3; }));
}

TEST(ChannelShutdown, DestroyingTheChannelFailsPendingCalls) {
  Parked parked;
  FakeServer server(parked.Handler());
  Controller cntl;
  EchoRequest request = Request("x");
  EchoResponse response;
  CountingDone done;
  {
    Channel channel;
    ChannelOptions options = TestOptions();
    options.timeout_ms = -1;  // only the shutdown can end this call
    ASSERT_EQ(channel.Init(server.address(), &options), 0);
    EchoService_Stub(&channel).Echo(&cntl, &request, &response, &done);
    ASSERT_TRUE(FakeServer::WaitFor([&] { return parked.size() == 1; }));
  }
  ASSERT_EQ(done.runs(), 1);  // ran before the destructor returned
  EXPECT_EQ(cntl.ErrorCode(), EFAILEDSOCKET);
  EXPECT_NE(cntl.ErrorText().find("destroyed"), std::string::npos) << cntl.ErrorText();
}

TEST(ChannelSync, SyncCallFromAnIoThreadIsRefused) {
  FakeServer server(EchoHandler());
  Channel channel;
  ChannelOptions options = TestOptions();
  options.callback_threads = 0;  // done runs on the I/O thread
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoService_Stub stub(&channel);
  Controller outer, inner;
  EchoRequest request = Request("x");
  EchoResponse outer_response, inner_response;
  CountingDone done;
  // Runs on a runtime thread and makes a synchronous call from there.
  struct Nested : google::protobuf::Closure {
    EchoService_Stub* stub;
    Controller* cntl;
    EchoRequest* request;
    EchoResponse* response;
    CountingDone* done;
    void Run() override {
      stub->Echo(cntl, request, response, nullptr);  // would block the loop that completes it
      done->Run();
    }
  } nested_done;
  nested_done.stub = &stub;
  nested_done.cntl = &inner;
  nested_done.request = &request;
  nested_done.response = &inner_response;
  nested_done.done = &done;
  google::protobuf::Closure* nested = &nested_done;
  stub.Echo(&outer, &request, &outer_response, nested);
  ASSERT_TRUE(done.WaitForRuns(1));
  EXPECT_FALSE(outer.Failed()) << outer.ErrorText();
  EXPECT_EQ(inner.ErrorCode(), EINVAL);
  EXPECT_NE(inner.ErrorText().find("deadlock"), std::string::npos);
}

}  // namespace
}  // namespace arenarpc::testing
