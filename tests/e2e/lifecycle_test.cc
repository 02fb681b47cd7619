// Server lifecycle and limits: Stop() with calls in flight (ELOGOFF for new ones, deadline),
// max_concurrency, max_body_size, idle timeout, option validation.

#include <functional>
#include <future>
#include <set>
#include <thread>

#include "arenarpc/error_codes.h"
#include "server_fixture.h"

namespace arenarpc::e2e {
namespace {

class LifecycleTest : public ServerTest {
 protected:
  TestRequest Request(const std::string& message, int delay_ms = 0) {
    TestRequest request;
    request.set_message(message);
    request.set_delay_ms(delay_ms);
    return request;
  }
};
ARENARPC_ALL_MODES(LifecycleTest);

TEST_P(LifecycleTest, StopFinishesCallsInFlightAndRefusesNewOnes) {
  ServerOptions options;
  options.stop_deadline = std::chrono::milliseconds(5000);
  StartServer(options);
  RawClient client(port_);
  TestRequest slow = Request("slow", 1500);  // outlasts the loop below on a loaded machine
  RawRequest raw_slow = RequestFor(&slow);
  const int64_t slow_a = client.Send(raw_slow);
  const int64_t slow_b = client.Send(raw_slow);
  // Both calls are in the handler before Stop() begins.
  ASSERT_TRUE(WaitForInFlight(2));
  auto stopped = std::async(std::launch::async, [&] { return server_->Stop(); });
  // Bounded by time, not by a number of calls: on a loaded machine the thread running Stop() may
  // start only after many calls.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until &&
         server_->GetServerStats().rejected_stopping == 0) {
    TestRequest fresh = Request("late");
    RawRequest raw = RequestFor(&fresh);
    RawReply reply = client.Call(raw);  // same connection: still open while draining
    if (reply.error_code == ELOGOFF) {
      EXPECT_EQ(Identity() + "[E2003]Server is stopping", reply.error_text);
      break;
    }
    EXPECT_EQ(0, reply.error_code);
  }
  EXPECT_EQ(1u, server_->GetServerStats().rejected_stopping);
  // The slow calls still complete successfully, then Stop() returns and the connection closes.
  std::set<int64_t> answered;
  for (int i = 0; i < 2; ++i) {
    RawReply reply;
    ASSERT_TRUE(client.Read(&reply));
    EXPECT_EQ(0, reply.error_code) << reply.error_text;
    answered.insert(reply.correlation_id);
  }
  EXPECT_EQ((std::set<int64_t>{slow_a, slow_b}), answered);
  EXPECT_EQ(0, stopped.get());
  EXPECT_TRUE(client.WaitForClose());
  EXPECT_EQ(0, server_->Join());
  RawClient refused(port_);
  if (refused.connected()) {
    EXPECT_TRUE(refused.WaitForClose(std::chrono::seconds(2)));
  }
  ExpectAllPairsReleased();
}

TEST_P(LifecycleTest, StopDeadlineCutsSlowCallsShortSafely) {
  ServerOptions options;
  options.stop_deadline = std::chrono::milliseconds(50);
  StartServer(options);
  RawClient client(port_);
  TestRequest slow = Request("very slow", 1000);
  RawRequest raw = RequestFor(&slow);
  client.Send(raw);
  ASSERT_TRUE(WaitForInFlight(1));
  EXPECT_EQ(0, server_->Stop());
  EXPECT_EQ(0, server_->Join());
  // Join() returned while the handler still held the call: its completion has not run yet.
  EXPECT_EQ(1u, service_->executor().unfinished());
  EXPECT_TRUE(client.WaitForClose());  // closed without the slow reply
  // The handler completes later, after Join(): its reply is dropped, its pair released.
  service_->executor().Drain();
  ExpectAllPairsReleased();
}

TEST_P(LifecycleTest, MaxConcurrencyAnswersExcessWithElimit) {
  ServerOptions options;
  options.max_concurrency = 2;
  StartServer(options);
  RawClient client(port_);
  TestRequest slow = Request("slow", 300);
  RawRequest raw_slow = RequestFor(&slow);
  const int64_t a = client.Send(raw_slow);
  const int64_t b = client.Send(raw_slow);
  TestRequest fast = Request("fast");
  RawRequest raw_fast = RequestFor(&fast);
  const int64_t c = client.Send(raw_fast);
  RawReply reply;
  ASSERT_TRUE(client.Read(&reply));  // the excess call is answered at once, not queued
  EXPECT_EQ(c, reply.correlation_id);
  EXPECT_EQ(ELIMIT, reply.error_code);
  EXPECT_EQ(Identity() + "[E2004]Reached server's max_concurrency=2", reply.error_text);
  std::set<int64_t> ok;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(client.Read(&reply));
    EXPECT_EQ(0, reply.error_code);
    ok.insert(reply.correlation_id);
  }
  EXPECT_EQ((std::set<int64_t>{a, b}), ok);
  EXPECT_EQ(0, client.Call(raw_fast).error_code);  // capacity is back
  EXPECT_EQ(1u, server_->GetServerStats().rejected_limit);
}

TEST_P(LifecycleTest, MaxBodySizeClosesOnlyThatConnection) {
  ServerOptions options;
  options.max_body_size = 1024;
  StartServer(options);
  RawClient good(port_);
  TestRequest small = Request("small");
  RawRequest raw_small = RequestFor(&small);
  EXPECT_EQ(0, good.Call(raw_small).error_code);

  RawClient bad(port_);
  TestRequest big = Request(std::string(2000, 'b'));
  RawRequest raw_big = RequestFor(&big);
  bad.Send(raw_big);
  EXPECT_TRUE(bad.WaitForClose());
  EXPECT_EQ(1u, StatSoon(&ServerStats::malformed_frames, 1));

  // body_size == max_body_size is allowed (the limit is inclusive).
  RawClient edge(port_);
  TestRequest fits = Request("");
  RawRequest raw_fits = RequestFor(&fits);
  for (size_t size = 900; size < 1024; ++size) {
    fits.set_message(std::string(size, 'f'));
    if (RawClient::Encode(raw_fits, edge.next_correlation_id()).size() - 12 == 1024) break;
  }
  ASSERT_EQ(1024u, RawClient::Encode(raw_fits, edge.next_correlation_id()).size() - 12);
  EXPECT_EQ(0, edge.Call(raw_fits).error_code);
  fits.set_message(fits.message() + "f");  // one byte over
  edge.Send(raw_fits);
  EXPECT_TRUE(edge.WaitForClose());
  EXPECT_EQ(2u, StatSoon(&ServerStats::malformed_frames, 2));

  EXPECT_EQ(0, good.Call(raw_small).error_code);  // the other connection was never disturbed
}

TEST_P(LifecycleTest, IdleConnectionsAreClosed) {
  ServerOptions options;
  options.idle_timeout_sec = 1;
  StartServer(options);
  RawClient client(port_);
  TestRequest request = Request("x");
  RawRequest raw = RequestFor(&request);
  EXPECT_EQ(0, client.Call(raw).error_code);
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_TRUE(client.WaitForClose(std::chrono::seconds(5)));
  EXPECT_GE(std::chrono::steady_clock::now() - begin, std::chrono::milliseconds(700));
  EXPECT_EQ(1u, StatSoon(&ServerStats::connections_closed_idle, 1));
}

TEST_P(LifecycleTest, RunUntilAskedToQuitReturnsAfterStop) {
  StartServer();
  auto waiter = std::async(std::launch::async, [&] { server_->RunUntilAskedToQuit(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(0, server_->Stop());
  EXPECT_EQ(std::future_status::ready, waiter.wait_for(std::chrono::seconds(5)));
}

// Options are validated by Start(); the message names the option and says why.
TEST(ServerOptionsTest, InvalidOptionsFailStartWithAReason) {
  struct Case {
    std::function<void(ServerOptions&)> change;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](ServerOptions& o) { o.memory_mode = "magic"; }, "memory_mode='magic' is invalid"},
      {[](ServerOptions& o) { o.num_threads = -1; }, "num_threads=-1"},
      {[](ServerOptions& o) { o.worker_threads = -2; }, "worker_threads=-2"},
      {[](ServerOptions& o) { o.max_body_size = 0; }, "max_body_size=0"},
      {[](ServerOptions& o) { o.max_concurrency = -1; }, "max_concurrency=-1"},
      {[](ServerOptions& o) { o.idle_timeout_sec = 0; }, "idle_timeout_sec=0"},
      {[](ServerOptions& o) { o.stop_deadline = std::chrono::milliseconds(-5); },
       "stop_deadline=-5ms"},
      {[](ServerOptions& o) { o.max_fibers_per_connection = 4097; },
       "max_fibers_per_connection=4097 is invalid (expected 0..max_fibers=4096)"},
      {[](ServerOptions& o) { o.max_streaming_fibers = -1; }, "max_streaming_fibers=-1"},
      {[](ServerOptions& o) { o.max_streaming_calls_per_connection = 0; },
       "max_streaming_calls_per_connection=0"},
      {[](ServerOptions& o) { o.http2_stream_window = 0; },
       "http2_stream_window=0 is invalid (expected 1..2147483647)"},
      {[](ServerOptions& o) { o.http2_connection_window = 1000; },
       "http2_connection_window=1000 is invalid (expected 65535..2147483647)"},
      {[](ServerOptions& o) { o.http2_max_frame_size = 1u << 24; },
       "http2_max_frame_size=16777216 is invalid (expected 16384..16777215)"},
      {[](ServerOptions& o) { o.http2_max_window = 1000; },
       "http2_max_window=1000 is invalid (expected 65535..2147483647)"},
      {[](ServerOptions& o) { o.memory.page_size = 1000; }, "memory options are invalid"},
      {[](ServerOptions& o) { o.method_memory_mode["x.Y.Z"] = "arena"; },
       "method_memory_mode: no method 'x.Y.Z'"},
      {[](ServerOptions& o) { o.method_memory_mode["arenarpc.e2e.TestService.Echo"] = "nope"; },
       "method_memory_mode[arenarpc.e2e.TestService.Echo]='nope' is invalid"},
  };
  for (const Case& c : cases) {
    TestServiceImpl service;
    Server server;
    ASSERT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE));
    ServerOptions options;
    options.num_threads = 1;
    c.change(options);
    EXPECT_EQ(-1, server.Start("127.0.0.1:0", options));
    EXPECT_NE(std::string::npos, server.last_error().find(c.expected))
        << "expected '" << c.expected << "' in: " << server.last_error();
  }
  TestServiceImpl service;
  Server server;
  EXPECT_EQ(-1, server.Start("127.0.0.1:0", ServerOptions{}));  // no service
  EXPECT_NE(std::string::npos, server.last_error().find("no service")) << server.last_error();
  ASSERT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE));
  EXPECT_EQ(-1, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE));  // duplicate
  EXPECT_NE(std::string::npos, server.last_error().find("already added")) << server.last_error();
  EXPECT_EQ(-1, server.Start("127.0.0.1", ServerOptions{}));
  EXPECT_NE(std::string::npos, server.last_error().find("no port")) << server.last_error();
  EXPECT_EQ(-1, server.Start("127.0.0.1:99999", ServerOptions{}));
  EXPECT_NE(std::string::npos, server.last_error().find("invalid port")) << server.last_error();
  // A port in use.
  Server first;
  TestServiceImpl first_service;
  ASSERT_EQ(0, first.AddService(&first_service, SERVER_DOESNT_OWN_SERVICE));
  ServerOptions one_thread;
  one_thread.num_threads = 1;
  ASSERT_EQ(0, first.Start("127.0.0.1:0", one_thread)) << first.last_error();
  EXPECT_EQ(-1, server.Start("127.0.0.1:" + std::to_string(first.listen_port()), one_thread));
  EXPECT_NE(std::string::npos, server.last_error().find("cannot listen")) << server.last_error();
  EXPECT_EQ(-1, first.Start("127.0.0.1:0", one_thread));  // already running
  // The main port listens, then internal_port is in use: Start() fails and releases the threads
  // and the listening socket it had set up...
  ServerOptions taken_internal = one_thread;
  taken_internal.internal_port = first.listen_port();
  EXPECT_EQ(-1, server.Start("127.0.0.1:0", taken_internal));
  EXPECT_NE(std::string::npos, server.last_error().find("internal_port")) << server.last_error();
  EXPECT_EQ(-1, server.listen_port());
  // ... so the same server starts afterwards and serves.
  ASSERT_EQ(0, server.Start("127.0.0.1:0", one_thread)) << server.last_error();
  Channel channel;
  ASSERT_EQ(0, channel.Init("127.0.0.1", server.listen_port(), nullptr)) << channel.last_error();
  EXPECT_EQ("", CallEcho(&channel, "after a failed start"));
}

}  // namespace
}  // namespace arenarpc::e2e
