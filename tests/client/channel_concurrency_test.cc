// Concurrency: many threads on one multiplexed connection, replies out of order, replies racing
// with timeouts (every call completes exactly once; a timed-out call's memory is never touched).
// Runs under ThreadSanitizer (label "concurrency") and AddressSanitizer.
#include <algorithm>
#include <random>
#include <thread>
#include <vector>

#include "client_test_util.h"

namespace arenarpc::testing {
namespace {

using example::EchoRequest;
using example::EchoResponse;
using example::EchoService_Stub;

TEST(ChannelConcurrency, ManyThreadsShareOneConnection) {
  FakeServer server(EchoHandler());
  Channel channel;
  ChannelOptions options = TestOptions();
  options.timeout_ms = 10000;
  options.io_threads = 2;
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoService_Stub stub(&channel);
  constexpr int kThreads = 6, kCallsPerThread = 150;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCallsPerThread; ++i) {
        Controller cntl;
        EchoRequest request;
        request.set_message("t" + std::to_string(t) + "-" + std::to_string(i));
        request.add_nested()->add_values(t * 1000 + i);
        cntl.request_attachment().Append(request.message());
        EchoResponse response;
        stub.Echo(&cntl, &request, &response, nullptr);
        if (!cntl.Failed() && response.message() == request.message() &&
            response.nested(0).values(0) == t * 1000 + i &&
            cntl.response_attachment().ToString() == request.message()) {
          ok.fetch_add(1);
        } else {
          ADD_FAILURE() << cntl.ErrorText();
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), kThreads * kCallsPerThread);
  EXPECT_EQ(server.connections_accepted(), 1);
  EXPECT_EQ(channel.stats().calls, static_cast<uint64_t>(kThreads * kCallsPerThread));
  EXPECT_EQ(channel.stats().dropped_responses, 0u);
}

TEST(ChannelConcurrency, RepliesInReverseOrderAreMatchedByCorrelationId) {
  constexpr int kCalls = 32;
  std::mutex mutex;
  std::vector<std::pair<std::shared_ptr<FakeConnection>, FakeRequest>> held;
  FakeServer server([&](const std::shared_ptr<FakeConnection>& connection, FakeRequest&& r) {
    std::lock_guard lock(mutex);
    held.emplace_back(connection, std::move(r));
    if (held.size() < kCalls) return;
    for (auto it = held.rbegin(); it != held.rend(); ++it) {  // last request answered first
      EchoRequest request;
      ASSERT_TRUE(DecodeRequest(it->second, &request));
      it->first->Reply(it->second, EchoOf(request));
    }
    held.clear();
  });
  Channel channel;
  ChannelOptions options = TestOptions();
  options.timeout_ms = 10000;
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoService_Stub stub(&channel);
  std::vector<Controller> cntls(kCalls);
  std::vector<EchoRequest> requests(kCalls);
  std::vector<EchoResponse> responses(kCalls);
  CountingDone done;
  for (int i = 0; i < kCalls; ++i) {
    requests[i].set_message("r" + std::to_string(i));
    stub.Echo(&cntls[i], &requests[i], &responses[i], &done);
  }
  ASSERT_TRUE(done.WaitForRuns(kCalls, std::chrono::seconds(15)));
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_FALSE(cntls[i].Failed()) << cntls[i].ErrorText();
    EXPECT_EQ(responses[i].message(), requests[i].message());
  }
  EXPECT_EQ(server.connections_accepted(), 1);
}

// Replies arrive around each call's deadline, so replies and timeouts race. Every call completes
// exactly once, either with its own echo or with ERPCTIMEDOUT; its state is freed in done, so a
// reply touching a timed-out call would be a use-after-free (ASan) or a race (TSan).
TEST(ChannelConcurrency, RepliesRacingTimeoutsCompleteEachCallOnce) {
  std::atomic<uint64_t> seed{1};
  std::vector<std::thread> repliers;
  std::mutex repliers_mutex;
  FakeServer server([&](const std::shared_ptr<FakeConnection>& connection, FakeRequest&& r) {
    std::lock_guard lock(repliers_mutex);
    repliers.emplace_back([connection, r = std::move(r), s = seed.fetch_add(1)] {
      // A quarter at once (must succeed), a quarter long after the timeout (must time out), the
      // rest within 40 ms either side of it (the race). The timeout leaves an immediate reply
      // room under ThreadSanitizer beside other tests on the same cores.
      const auto delay = s % 4 == 0   ? std::chrono::microseconds(0)
                         : s % 4 == 1 ? std::chrono::microseconds(1000000)
                                      : std::chrono::microseconds(160000 + (s * 7919) % 80000);
      std::this_thread::sleep_for(delay);
      EchoRequest request;
      if (DecodeRequest(r, &request)) connection->Reply(r, EchoOf(request));
    });
  });
  Channel channel;
  ChannelOptions options = TestOptions();
  options.timeout_ms = 200;  // replies come at once, after 160..240 ms, or after 1 s
  options.io_threads = 2;
  ASSERT_EQ(channel.Init(server.address(), &options), 0);
  EchoService_Stub stub(&channel);

  struct CallState : google::protobuf::Closure {
    Controller cntl;
    EchoRequest request;
    EchoResponse response;
    std::atomic<int>* succeeded;
    std::atomic<int>* timed_out;
    std::atomic<int>* completed;
    void Run() override {
      if (!cntl.Failed()) {
        EXPECT_EQ(response.message(), request.message());
        succeeded->fetch_add(1);
      } else {
        EXPECT_EQ(cntl.ErrorCode(), ERPCTIMEDOUT) << cntl.ErrorText();
        EXPECT_FALSE(response.has_message());
        timed_out->fetch_add(1);
      }
      completed->fetch_add(1);
      delete this;
    }
  };
  constexpr int kCalls = 200;
  std::atomic<int> succeeded{0}, timed_out{0}, completed{0};
  for (int i = 0; i < kCalls; ++i) {
    auto* state = new CallState;
    state->request.set_message("race" + std::to_string(i));
    state->succeeded = &succeeded;
    state->timed_out = &timed_out;
    state->completed = &completed;
    stub.Echo(&state->cntl, &state->request, &state->response, state);
  }
  const bool all_completed = FakeServer::WaitFor([&] { return completed.load() == kCalls; });
  // A call that timed out before its frame was written is never sent; the others reach the
  // server and get a reply. Wait until no more requests arrive, then for every reply to be out.
  for (int last = -1; last != server.requests_received();) {
    last = server.requests_received();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  {
    std::lock_guard lock(repliers_mutex);
    for (auto& thread : repliers) thread.join();
    repliers.clear();
  }
  ASSERT_TRUE(all_completed) << completed.load() << " of " << kCalls << " calls completed";
  EXPECT_EQ(succeeded.load() + timed_out.load(), kCalls);
  // Both outcomes happened: the immediate replies cannot all time out, the late ones cannot win.
  EXPECT_GT(succeeded.load(), 0);
  EXPECT_GE(timed_out.load(), kCalls / 4);
  // Every reply either completed its call or was dropped and counted — never both.
  const uint64_t received = static_cast<uint64_t>(server.requests_received());
  EXPECT_TRUE(FakeServer::WaitFor([&] {
    return channel.dropped_responses() + static_cast<uint64_t>(succeeded.load()) == received;
  })) << channel.dropped_responses() << " dropped, " << succeeded.load() << " succeeded, "
      << received << " received";
  EXPECT_EQ(channel.stats().timeouts, static_cast<uint64_t>(timed_out.load()));
}

TEST(ChannelConcurrency, PooledAndShortUnderManyThreads) {
  FakeServer server(EchoHandler());
  for (const char* type : {"pooled", "short"}) {
    Channel channel;
    ChannelOptions options = TestOptions(type);
    options.timeout_ms = 10000;
    options.io_threads = 2;
    ASSERT_EQ(channel.Init(server.address(), &options), 0);
    EchoService_Stub stub(&channel);
    std::atomic<int> ok{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 25; ++i) {
          Controller cntl;
          EchoRequest request;
          request.set_message(std::string(type) + std::to_string(t * 100 + i));
          EchoResponse response;
          stub.Echo(&cntl, &request, &response, nullptr);
          if (!cntl.Failed() && response.message() == request.message()) ok.fetch_add(1);
        }
      });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(ok.load(), 100) << type;
  }
}

}  // namespace
}  // namespace arenarpc::testing
