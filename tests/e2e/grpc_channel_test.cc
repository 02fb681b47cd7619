// arenarpc::Channel speaking gRPC over HTTP/2 (ChannelOptions::protocol "grpc"): against the
// arenarpc server's own gRPC port — unary calls, metadata both ways, gzip both ways, status
// mapping, deadlines (grpc-timeout) and cancellation (RST_STREAM), messages past the limits, many
// concurrent calls on one connection, a cluster with rr and a dead server, backup requests — and
// against scripted HTTP/2 servers on sockets: GOAWAY with calls past its last stream (retried on
// a new connection), a server that never answers, a huge header list and endless DATA, while a
// good gRPC client on another channel keeps 0 errors.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../free_port.h"
#include "../protocol/scripted_h2_server.h"
#include "arenarpc/callback.h"
#include "arenarpc/error_codes.h"
#include "good_client.h"
#include "server_fixture.h"

namespace arenarpc::e2e {
namespace {

using Clock = std::chrono::steady_clock;
using testing_h2::ScriptedH2Server;

ChannelOptions GrpcOptions() {
  ChannelOptions options;
  options.protocol = "grpc";
  options.timeout_ms = 10000;
  return options;
}

std::unique_ptr<Channel> GrpcChannel(const std::string& address, ChannelOptions options,
                                     const char* balancer = nullptr) {
  auto channel = std::make_unique<Channel>();
  const int rv = balancer != nullptr ? channel->Init(address.c_str(), balancer, &options)
                                     : channel->Init(address, &options);
  EXPECT_EQ(0, rv) << channel->last_error();
  return channel;
}

// Echo calls from `threads` threads, `calls` each, request i of thread t filled by make(t, i, ...):
// how many came back equal (a failed call is a test failure too).
int EchoFromThreads(Channel& channel, int threads, int calls,
                    const std::function<void(int t, int i, TestRequest*)>& make) {
  std::atomic<int> ok{0};
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&, t] {
      TestService_Stub stub(&channel);
      for (int i = 0; i < calls; ++i) {
        Controller cntl;
        TestRequest request;
        make(t, i, &request);
        TestResponse response;
        stub.Echo(&cntl, &request, &response, nullptr);
        EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
        ok += !cntl.Failed() && response.message() == request.message();
      }
    });
  }
  for (auto& thread : running) thread.join();
  return ok.load();
}

class GrpcChannelTest : public ServerTest {
 protected:
  std::string Address() const { return "127.0.0.1:" + std::to_string(port_); }
};
INSTANTIATE_TEST_SUITE_P(Heap, GrpcChannelTest, ::testing::Values("heap"));

TEST_P(GrpcChannelTest, UnaryMetadataGzipStatusesAndLimits) {
  ServerOptions server_options;
  server_options.max_body_size = 64u << 10;
  StartServer(server_options);
  ChannelOptions options = GrpcOptions();
  options.max_body_size = 128u << 10;
  auto channel = GrpcChannel(Address(), options);
  TestService_Stub stub(channel.get());

  {  // success, metadata both ways, gzip both ways
    Controller cntl;
    cntl.request_user_fields()["X-Trace"] = "t1";
    cntl.set_request_compress_type(COMPRESS_TYPE_GZIP);
    TestRequest request;
    request.set_message(std::string(5000, 'a'));
    request.add_items("i1");
    request.set_response_compress(static_cast<int>(COMPRESS_TYPE_GZIP));
    TestResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
    EXPECT_EQ(request.message(), response.message());
    ASSERT_EQ(1, response.items_size());
    EXPECT_EQ("t1-back", cntl.response_user_fields()["x-trace"]);
    EXPECT_EQ(COMPRESS_TYPE_GZIP, cntl.response_compress_type());
    EXPECT_EQ(Address(), cntl.remote_side());
  }
  {  // a handler's error: brpc code -> gRPC status -> brpc code, with its text
    Controller cntl;
    TestRequest request;
    request.set_message("x");
    request.set_fail_code(EPERM);
    request.set_fail_text("not you");
    TestResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    EXPECT_EQ(EPERM, cntl.ErrorCode());
    EXPECT_NE(std::string::npos, cntl.ErrorText().find("not you")) << cntl.ErrorText();
    EXPECT_EQ("", cntl.grpc_status_details()) << "the handler set none";
  }
  {  // a handler's rich status: grpc-status-details-bin reaches the caller's controller, byte for
     // byte (a google.rpc.Status{code: 7, message: "rich"} with a \0 and high bytes after it)
    const std::string details = std::string("\x08\x07\x12\x04rich\x1a\x03\x00\xff\x80", 12);
    Controller cntl;
    TestRequest request;
    request.set_message("x");
    request.set_fail_code(EPERM);
    request.set_fail_text("rich");
    request.set_status_details(details);
    TestResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    EXPECT_EQ(EPERM, cntl.ErrorCode());
    EXPECT_EQ(details, cntl.grpc_status_details());
  }
  {  // a request past the server's limit: RESOURCE_EXHAUSTED -> ELIMIT
    Controller cntl;
    TestRequest request;
    request.set_message(std::string(100u << 10, 'q'));
    TestResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    EXPECT_EQ(ELIMIT, cntl.ErrorCode()) << cntl.ErrorText();
  }
  {  // a response past the channel's max_body_size: ERESPONSE, the stream is reset
    Controller cntl;
    TestRequest request;
    request.set_message("x");
    request.set_response_bytes(200u << 10);
    TestResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    EXPECT_EQ(ERESPONSE, cntl.ErrorCode()) << cntl.ErrorText();
    EXPECT_NE(std::string::npos, cntl.ErrorText().find("max_body_size")) << cntl.ErrorText();
  }
  {  // the connection is still good
    Controller cntl;
    TestRequest request;
    request.set_message("after");
    TestResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
    EXPECT_EQ("after", response.message());
  }
  const ChannelStats stats = channel->stats();
  EXPECT_EQ(1u, stats.connections_opened);
  EXPECT_EQ(0u, stats.retries);
  EXPECT_EQ(0u, server_->GetServerStats().malformed_frames);
}

TEST_P(GrpcChannelTest, DeadlineAndCancellationResetTheStream) {
  StartServer();
  auto channel = GrpcChannel(Address(), GrpcOptions());
  TestService_Stub stub(channel.get());
  {  // deadline: ERPCTIMEDOUT at the client's deadline; the server got grpc-timeout
    Controller cntl;
    cntl.set_timeout_ms(150);
    TestRequest request;
    request.set_message("slow");
    request.set_delay_ms(400);
    TestResponse response;
    const auto start = Clock::now();
    stub.Echo(&cntl, &request, &response, nullptr);
    EXPECT_EQ(ERPCTIMEDOUT, cntl.ErrorCode()) << cntl.ErrorText();
    EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(350));
  }
  for (int i = 0; i < 500 && server_->GetServerStats().in_flight != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the slow handler ends
  }
  {  // StartCancel: ECANCELED at once; RST_STREAM reaches the handler (it answers on cancel)
    Controller cntl;
    TestRequest request;
    request.set_message("cancel me");
    request.set_reply_on_cancel(true);
    TestResponse response;
    stub.Echo(&cntl, &request, &response, DoNothing());
    ASSERT_TRUE(WaitForInFlight(1));
    cntl.StartCancel();
    Join(cntl.call_id());
    EXPECT_EQ(ECANCELED, cntl.ErrorCode());
    int64_t in_flight = 1;  // the handler saw the cancel and answered
    for (int i = 0; i < 500 && in_flight != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      in_flight = server_->GetServerStats().in_flight;
    }
    EXPECT_EQ(0, in_flight);
  }
  Controller cntl;
  TestRequest request;
  request.set_message("after");
  TestResponse response;
  stub.Echo(&cntl, &request, &response, nullptr);
  EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(1u, channel->stats().connections_opened);
}

// 16 threads x 25 calls on one connection with at most 8 streams open: the rest queue.
TEST_P(GrpcChannelTest, ManyConcurrentCallsShareOneConnection) {
  StartServer();
  ChannelOptions options = GrpcOptions();
  options.grpc_max_concurrent_streams = 8;
  auto channel = GrpcChannel(Address(), options);
  EXPECT_EQ(16 * 25, EchoFromThreads(*channel, 16, 25, [](int t, int i, TestRequest* request) {
              request->set_message("t" + std::to_string(t) + "-" + std::to_string(i));
              request->set_async(i % 2 == 0);
            }));
  EXPECT_EQ(1u, channel->stats().connections_opened);
  EXPECT_EQ(0u, channel->stats().failed_calls);
}

// rr over two servers and a dead address: every call succeeds (the dead one is retried away
// from), and both live servers serve.
TEST_P(GrpcChannelTest, ClusterRoundRobinWithADeadServer) {
  StartServer();
  TestServiceImpl other_service;
  Server other;
  ASSERT_EQ(0, other.AddService(&other_service, SERVER_DOESNT_OWN_SERVICE));
  ASSERT_EQ(0, other.Start("127.0.0.1:0", ServerOptions{}));
  // A port nobody listens on, outside the range a parallel test's server could be given.
  const int dead_port = arenarpc::testing::FreePort();
  ASSERT_GT(dead_port, 0);
  const std::string url = "list://" + Address() + ",127.0.0.1:" +
                          std::to_string(other.listen_port()) + ",127.0.0.1:" +
                          std::to_string(dead_port);
  auto channel = GrpcChannel(url, GrpcOptions(), "rr");
  TestService_Stub stub(channel.get());
  for (int i = 0; i < 30; ++i) {
    Controller cntl;
    TestRequest request;
    request.set_message("c" + std::to_string(i));
    TestResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
  }
  EXPECT_GE(service_->handler_calls(), 10);
  EXPECT_GE(other_service.handler_calls(), 10);
  EXPECT_GE(channel->stats().retries + channel->stats().servers_isolated, 1u);
  EXPECT_EQ(0u, channel->stats().failed_calls);
  other.Stop();
  other.Join();
}

// BDP-based window growth on both ends over real sockets (PINGs with the data, SETTINGS and
// WINDOW_UPDATE mid-connection): 4 MiB messages both ways over 64 KiB windows that may grow to
// 8 MiB, from 4 threads on one connection, arrive intact; the same with fixed windows for the
// time side by side (RecordProperty; loopback's round trip is short, so the gain is small).
TEST_P(GrpcChannelTest, BdpGrowthCarriesLargeMessagesOverSmallWindows) {
  ServerOptions server_options;
  server_options.max_body_size = 16u << 20;
  server_options.http2_stream_window = 65535;
  server_options.http2_connection_window = 65535;
  server_options.http2_max_window = 8u << 20;
  StartServer(server_options);
  const auto run = [&](uint32_t max_window) {
    ChannelOptions options = GrpcOptions();
    options.max_body_size = 16u << 20;
    options.grpc_stream_window = 65535;
    options.grpc_connection_window = 65535;
    options.grpc_max_window = max_window;
    auto channel = GrpcChannel(Address(), options);
    const Clock::time_point start = Clock::now();
    EXPECT_EQ(20, EchoFromThreads(*channel, 4, 5, [](int t, int i, TestRequest* request) {
                request->set_message(std::string(4u << 20, static_cast<char>('a' + t + i)));
              }));
    EXPECT_EQ(1u, channel->stats().connections_opened);
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  };
  RecordProperty("ms_client_fixed", static_cast<int>(run(0)));
  RecordProperty("ms_client_growing", static_cast<int>(run(8u << 20)));
}

TEST(GrpcChannelOptions, InitRefusesWhatGrpcDoesNotCarry) {
  ChannelOptions options = GrpcOptions();
  options.grpc_max_concurrent_streams = 0;
  Channel zero;
  EXPECT_EQ(-1, zero.Init("127.0.0.1:1", &options));
  options = GrpcOptions();
  options.protocol = "h2";
  Channel h2;
  EXPECT_EQ(-1, h2.Init("127.0.0.1:1", &options));
  EXPECT_NE(std::string::npos, h2.last_error().find("h2:grpc")) << h2.last_error();
  options = GrpcOptions();
  options.grpc_connection_window = 1000;
  Channel small_window;
  EXPECT_EQ(-1, small_window.Init("127.0.0.1:1", &options));
  EXPECT_NE(std::string::npos,
            small_window.last_error().find(
                "grpc_connection_window=1000 is invalid (expected 65535..2147483647)"))
      << small_window.last_error();
  options = GrpcOptions();
  options.grpc_max_window = 1000;
  Channel small_cap;
  EXPECT_EQ(-1, small_cap.Init("127.0.0.1:1", &options));
  EXPECT_NE(std::string::npos,
            small_cap.last_error().find("grpc_max_window=1000 is invalid (expected 0 = off"))
      << small_cap.last_error();
  options = GrpcOptions();
  options.grpc_max_frame_size = 1000;
  Channel small_frames;
  EXPECT_EQ(-1, small_frames.Init("127.0.0.1:1", &options));
  EXPECT_NE(std::string::npos, small_frames.last_error().find(
                                   "grpc_max_frame_size=1000 is invalid (expected 16384..16777215)"))
      << small_frames.last_error();
}

// A loopback TCP server whose connections each run a ScriptedH2Server made by `script`
// (connection index -> server). One thread polls every connection.
class ScriptedSocketServer {
 public:
  using Script = std::function<void(int connection, ScriptedH2Server& server)>;
  explicit ScriptedSocketServer(Script script) : script_(std::move(script)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    listen(listen_fd_, 16);
    socklen_t len = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~ScriptedSocketServer() {
    stop_ = true;
    thread_.join();
    for (auto& connection : connections_) close(connection.fd);
    close(listen_fd_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int accepted() const { return accepted_.load(); }
  // Runs `read` on the scripted servers under the loop's lock.
  template <class F>
  auto With(F&& read) {
    std::lock_guard lock(mutex_);
    return read(connections_);
  }
  struct Connection {
    int fd = -1;
    std::unique_ptr<ScriptedH2Server> server;
  };

 private:
  void Loop() {
    while (!stop_) {
      std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}};
      {
        std::lock_guard lock(mutex_);
        for (auto& connection : connections_) fds.push_back({connection.fd, POLLIN, 0});
      }
      poll(fds.data(), fds.size(), 5);
      std::lock_guard lock(mutex_);
      if ((fds[0].revents & POLLIN) != 0) {
        Connection connection;
        connection.fd = accept(listen_fd_, nullptr, nullptr);
        connection.server = std::make_unique<ScriptedH2Server>();
        script_(accepted_++, *connection.server);
        connections_.push_back(std::move(connection));
      }
      for (size_t i = 0; i < connections_.size(); ++i) {
        Connection& connection = connections_[i];
        if (connection.fd < 0) continue;
        if (i + 1 < fds.size() && (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
          char buffer[65536];
          const ssize_t n = recv(connection.fd, buffer, sizeof(buffer), 0);
          if (n <= 0 || !connection.server->Input(std::string(buffer, static_cast<size_t>(n)))) {
            close(connection.fd);
            connection.fd = -1;
            continue;
          }
        }
        // Bounded per turn, so that a hostile script's endless output does not starve reads.
        std::string out = connection.server->Output();
        size_t sent = 0;
        while (sent < out.size()) {
          const ssize_t n = send(connection.fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
          if (n <= 0) break;
          sent += static_cast<size_t>(n);
        }
      }
    }
  }

  Script script_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::mutex mutex_;
  std::vector<Connection> connections_;
  std::thread thread_;
};

std::string EchoReply(const std::string& text) {
  TestResponse response;
  response.set_message(text);
  return response.SerializeAsString();
}

// The first connection takes one call and sends GOAWAY naming it; the other call, never
// processed, goes again on a new connection and succeeds.
TEST(GrpcChannelScripted, GoawayRetriesCallsPastTheLastStreamOnANewConnection) {
  ScriptedSocketServer fake([](int connection, ScriptedH2Server& server) {
    server.on_request = [&server, connection](int32_t id) {
      if (connection == 0) {
        if (id == 3) {
          server.GoAway(1);
          server.RespondOk(1, EchoReply("first"));
        }
      } else {
        server.RespondOk(id, EchoReply("again"));
      }
    };
  });
  auto channel = GrpcChannel(fake.address(), GrpcOptions());
  TestService_Stub stub(channel.get());
  Controller a, b;
  TestRequest request;
  request.set_message("x");
  TestResponse response_a, response_b;
  stub.Echo(&a, &request, &response_a, DoNothing());
  stub.Echo(&b, &request, &response_b, DoNothing());
  Join(a.call_id());
  Join(b.call_id());
  ASSERT_FALSE(a.Failed()) << a.ErrorText();
  ASSERT_FALSE(b.Failed()) << b.ErrorText();
  EXPECT_EQ("first", response_a.message());
  EXPECT_EQ("again", response_b.message());
  EXPECT_EQ(1, b.retried_count());
  EXPECT_EQ(2, fake.accepted());
  EXPECT_EQ(2u, channel->stats().connections_opened);
}

// A server that takes every call and never answers: each call ends at its deadline and its
// stream is reset (RST_STREAM CANCEL reaches the server); nothing is held for them.
TEST(GrpcChannelScripted, ServerThatNeverAnswers) {
  ScriptedSocketServer fake([](int, ScriptedH2Server&) {});
  ChannelOptions options = GrpcOptions();
  options.timeout_ms = 100;
  options.max_consecutive_timeouts = 0;
  auto channel = GrpcChannel(fake.address(), options);
  std::vector<std::unique_ptr<Controller>> controllers;
  TestRequest request;
  request.set_message("x");
  std::vector<TestResponse> responses(20);
  TestService_Stub stub(channel.get());
  for (int i = 0; i < 20; ++i) {
    controllers.push_back(std::make_unique<Controller>());
    stub.Echo(controllers.back().get(), &request, &responses[i], DoNothing());
  }
  for (auto& cntl : controllers) {
    Join(cntl->call_id());
    EXPECT_EQ(ERPCTIMEDOUT, cntl->ErrorCode());
  }
  int canceled = 0;
  for (int i = 0; i < 200 && canceled < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    canceled = fake.With([](auto& connections) {
      int n = 0;
      for (auto& connection : connections) n += connection.server->canceled_by_client();
      return n;
    });
  }
  EXPECT_EQ(20, canceled);
  EXPECT_EQ(1, fake.accepted());
  EXPECT_EQ(20u, channel->stats().timeouts);
}

// Backup requests: rr over a server that never answers and the arenarpc server; a call that went
// to the silent one sends its backup to the other after backup_request_ms and succeeds; the
// loser's stream is reset.
TEST_P(GrpcChannelTest, BackupRequestWinsOverASilentServer) {
  StartServer();
  ScriptedSocketServer silent([](int, ScriptedH2Server&) {});
  ChannelOptions options = GrpcOptions();
  options.backup_request_ms = 30;
  options.timeout_ms = 5000;
  auto channel = GrpcChannel("list://" + silent.address() + "," + Address(), options, "rr");
  TestService_Stub stub(channel.get());
  for (int i = 0; i < 6; ++i) {
    Controller cntl;
    TestRequest request;
    request.set_message("b" + std::to_string(i));
    TestResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
    EXPECT_EQ(request.message(), response.message());
  }
  const ChannelStats stats = channel->stats();
  EXPECT_GE(stats.backup_requests, 3u);
  int canceled = 0;
  for (int i = 0; i < 200 && canceled < static_cast<int>(stats.backup_requests); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    canceled = silent.With([](auto& connections) {
      int n = 0;
      for (auto& connection : connections) n += connection.server->canceled_by_client();
      return n;
    });
  }
  EXPECT_EQ(static_cast<int>(stats.backup_requests), canceled);  // each loser's RST_STREAM
}

// Hostile responses, each on a connection of its own: a header list just past
// grpc_max_header_list_bytes (the call fails, nothing kept), one of megabytes (the call fails; the
// connection ends), and endless DATA (the call fails once its message is complete and more comes).
// A good gRPC client of the arenarpc server on another channel keeps 0 errors meanwhile.
TEST_P(GrpcChannelTest, HostileResponsesFailTheirCallsOnly) {
  StartServer();
  auto good = std::make_unique<GoodClient>(GrpcChannel(Address(), GrpcOptions()));
  ScriptedSocketServer fake([](int, ScriptedH2Server& server) {
    server.on_request = [&server](int32_t id) {
      const std::string kind = server.header(id, "x-kind");
      testing_h2::Headers headers = {{":status", "200"}, {"content-type", "application/grpc"}};
      if (kind == "headers" || kind == "many-headers") {
        const int count = kind == "headers" ? 100 : 5000;
        for (int i = 0; i < count; ++i) {
          headers.emplace_back("x-h" + std::to_string(i), std::string(1000, 'h'));
        }
        server.Respond(id, std::move(headers), nullptr, {});
      } else {
        auto sent = std::make_shared<size_t>(0);
        server.Respond(id, std::move(headers),
                       [sent](uint8_t* buf, size_t length, bool*) {
                         for (size_t i = 0; i < length; ++i) {  // declares 1 MB, sends forever
                           const size_t at = (*sent)++;
                           buf[i] = at == 0 ? 0 : at == 2 ? 0x10 : at < 5 ? 0 : 'd';
                         }
                         return length;
                       },
                       {});
      }
    };
  });
  ChannelOptions options = GrpcOptions();
  options.grpc_max_header_list_bytes = 16u << 10;
  options.max_body_size = 4u << 20;
  const auto call = [&](const char* kind) {  // a channel (a connection) per case
    auto channel = GrpcChannel(fake.address(), options);
    TestService_Stub stub(channel.get());
    Controller cntl;
    cntl.request_user_fields()["x-kind"] = kind;
    TestRequest request;
    request.set_message("x");
    TestResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    return std::make_pair(cntl.ErrorCode(), cntl.ErrorText());
  };
  auto [code, text] = call("headers");
  EXPECT_EQ(ERESPONSE, code) << text;
  EXPECT_NE(std::string::npos, text.find("header list")) << text;
  // Megabytes: the call fails at the header limit, or with the connection when nghttp2 refuses
  // the 9th CONTINUATION frame first (both arrive in one read or two).
  std::tie(code, text) = call("many-headers");
  EXPECT_TRUE(code == ERESPONSE || code == EINVAL) << text;
  std::tie(code, text) = call("data");
  EXPECT_EQ(ERESPONSE, code) << text;
  EXPECT_NE(std::string::npos, text.find("more than one")) << text;
  good->Stop();
  EXPECT_GT(good->calls(), 0);
  EXPECT_EQ(0, good->failures()) << good->last_error();
}

}  // namespace
}  // namespace arenarpc::e2e
