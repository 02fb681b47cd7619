// Handlers on fibers: a front server whose handler calls a backend synchronously (the brpc proxy
// shape), nested proxies, a handler that blocks its thread for real, cancellation and deadline of
// a suspended call, the max_fibers limit and Stop() while fibers wait.
//
// The proxy's bound: N calls through a backend that answers after 20 ms (200 ms in sanitizer
// builds) wait on the backend together — at least N/4 (64 calls) or N/10 (1,000 calls: the first
// ones may be answered before the last are read) at once, where a server holding a thread per
// waiting call reaches num_threads = 2 — and finish within 5 s (such a server needs
// N/2 x 20 ms: 10 s for 1,000).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/channel.h"
#include "arenarpc/closure_guard.h"
#include "arenarpc/controller.h"
#include "arenarpc/error_codes.h"
#include "arenarpc/fiber.h"
#include "arenarpc/server.h"
#include "e2e_test.pb.h"
#include "test_service.h"

namespace arenarpc::e2e {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The backend's delay: 20 ms; sanitizer builds read and start a burst of calls ~10x slower, so
// there the backend waits 200 ms to keep the calls' waits overlapping as they do in release.
#if defined(ARENARPC_SANITIZED)
constexpr int kBackendDelayMs = 200;
// A thousand calls: a fresh-clone TSan run on a loaded CI machine started them at ~440 per second,
// so 200 ms overlapped only 87 of them; 600 ms overlaps ~260 at that rate.
constexpr int kThousandCallsDelayMs = 600;
constexpr auto kThousandCallsWall = std::chrono::seconds(15);
#else
constexpr int kBackendDelayMs = 20;
constexpr int kThousandCallsDelayMs = 20;
constexpr auto kThousandCallsWall = std::chrono::seconds(5);
#endif

// Forwards Echo to a backend with a synchronous call. items[0] picks a variation:
//   "block": blocks its own thread for block_ms (no backend call);
//   "timeout": the backend call has timeout_ms = 50;
//   "cancel": a second fiber cancels the backend call after 30 ms.
class ProxyService final : public TestService {
 public:
  explicit ProxyService(const std::string& backend) {
    ChannelOptions options;
    options.timeout_ms = 10000;
    EXPECT_EQ(0, channel_.Init(backend, &options)) << channel_.last_error();
  }

  void Echo(google::protobuf::RpcController* controller, const TestRequest* request,
            TestResponse* response, google::protobuf::Closure* done) override {
    ClosureGuard guard(done);
    const std::string variation = request->items_size() > 0 ? request->items(0) : "";
    if (variation == "block") {
      std::this_thread::sleep_for(std::chrono::milliseconds(request->block_ms()));
      response->set_message("blocked");
      return;
    }
    Controller backend;
    if (variation == "timeout") backend.set_timeout_ms(50);
    if (variation == "cancel") {
      EXPECT_TRUE(fiber::Start([id = backend.call_id()] {
        fiber::SleepFor(30ms);
        StartCancel(id);
      }));
    }
    TestRequest forwarded = *request;
    forwarded.clear_items();
    TestResponse answer;
    Track(+1);
    TestService_Stub(&channel_).Echo(&backend, &forwarded, &answer, nullptr);
    Track(-1);
    if (backend.Failed()) {
      static_cast<Controller*>(controller)->SetFailed(backend.ErrorCode(), backend.ErrorText());
      return;
    }
    response->set_message("via proxy: " + answer.message());
    if (!fiber::InFiber()) response->set_message("not on a fiber");
  }

  int peak_waiting() const { return peak_.load(); }

 private:
  void Track(int delta) {
    const int now = waiting_.fetch_add(delta) + delta;
    int peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
  }
  Channel channel_;
  std::atomic<int> waiting_{0}, peak_{0};
};

// A server running `service` on 127.0.0.1:<any>.
std::unique_ptr<Server> StartServer(google::protobuf::Service* service, ServerOptions options) {
  auto server = std::make_unique<Server>();
  EXPECT_EQ(0, server->AddService(service, SERVER_DOESNT_OWN_SERVICE)) << server->last_error();
  EXPECT_EQ(0, server->Start("127.0.0.1:0", options)) << server->last_error();
  return server;
}

std::string Address(const Server& server) {
  return "127.0.0.1:" + std::to_string(server.listen_port());
}

struct CallResult {
  Controller controller;
  TestRequest request;
  TestResponse response;
};

// Sends `n` calls at once (asynchronously) and waits for all; returns them with their outcome.
std::vector<std::unique_ptr<CallResult>> CallConcurrently(
    const std::string& address, int n, int delay_ms, const std::string& variation = "") {
  Channel channel;
  ChannelOptions options;
  options.timeout_ms = 30000;
  EXPECT_EQ(0, channel.Init(address, &options)) << channel.last_error();
  TestService_Stub stub(&channel);
  std::vector<std::unique_ptr<CallResult>> calls;
  for (int i = 0; i < n; ++i) {
    auto call = std::make_unique<CallResult>();
    call->request.set_message("m" + std::to_string(i));
    call->request.set_delay_ms(delay_ms);
    if (!variation.empty()) call->request.add_items(variation);
    stub.Echo(&call->controller, &call->request, &call->response, DoNothing());
    calls.push_back(std::move(call));
  }
  for (auto& call : calls) Join(call->controller.call_id());
  return calls;
}

class FiberProxyTest : public ::testing::Test {
 protected:
  void SetUp() override { backend_ = StartServer(&backend_service_, ServerOptions{}); }
  void TearDown() override {
    front_.reset();
    backend_.reset();
  }
  void StartFront(ServerOptions options = {}) {
    proxy_ = std::make_unique<ProxyService>(Address(*backend_));
    front_ = StartServer(proxy_.get(), options);
  }

  TestServiceImpl backend_service_;  // delay_ms: answers after it, holding no thread
  std::unique_ptr<Server> backend_;
  std::unique_ptr<ProxyService> proxy_;
  std::unique_ptr<Server> front_;
};

void ExpectProxied(int n, const std::vector<std::unique_ptr<CallResult>>& calls) {
  ASSERT_EQ(calls.size(), static_cast<size_t>(n));
  int ok = 0;
  for (int i = 0; i < n; ++i) {
    const CallResult& call = *calls[static_cast<size_t>(i)];
    EXPECT_FALSE(call.controller.Failed()) << call.controller.ErrorText();
    if (call.response.message() == "via proxy: m" + std::to_string(i)) ++ok;
  }
  EXPECT_EQ(ok, n);
}

TEST_F(FiberProxyTest, SixtyFourProxiedCallsWaitOnTheBackendTogether) {
  StartFront();  // default options: one thread per CPU
  const auto start = Clock::now();
  auto calls = CallConcurrently(Address(*front_), 64, kBackendDelayMs);
  const auto wall = Clock::now() - start;
  ExpectProxied(64, calls);
  EXPECT_GE(proxy_->peak_waiting(), 16);
  EXPECT_LT(wall, 5s);
  EXPECT_EQ(front_->GetServerStats().rejected_fiber_limit, 0u);
}

TEST_F(FiberProxyTest, AThousandProxiedCallsWaitOnTheBackendTogether) {
  StartFront();
  const auto start = Clock::now();
  auto calls = CallConcurrently(Address(*front_), 1000, kThousandCallsDelayMs);
  const auto wall = Clock::now() - start;
  ExpectProxied(1000, calls);
  EXPECT_GE(proxy_->peak_waiting(), 100);
  EXPECT_LT(wall, kThousandCallsWall)
      << "one at a time would take " << kThousandCallsDelayMs << " s";
}

TEST_F(FiberProxyTest, NestedSynchronousCallsThroughTwoProxies) {
  // client -> A -> B -> backend, every hop synchronous, A and B on one thread each.
  ServerOptions one_thread;
  one_thread.num_threads = 1;
  ProxyService middle(Address(*backend_));
  auto b = StartServer(&middle, one_thread);
  ProxyService outer(Address(*b));
  auto a = StartServer(&outer, one_thread);
  auto calls = CallConcurrently(Address(*a), 64, kBackendDelayMs);
  for (int i = 0; i < 64; ++i) {
    const CallResult& call = *calls[static_cast<size_t>(i)];
    EXPECT_FALSE(call.controller.Failed()) << call.controller.ErrorText();
    EXPECT_EQ(call.response.message(), "via proxy: via proxy: m" + std::to_string(i));
  }
  EXPECT_GE(outer.peak_waiting(), 16);  // one thread, yet many of them waiting at once
  EXPECT_GE(middle.peak_waiting(), 16);
}

TEST_F(FiberProxyTest, AHandlerBlockingItsThreadLeavesTheOtherThreadToTheFibers) {
  ServerOptions options;
  options.num_threads = 2;
  StartFront(options);
  Channel channel;
  ChannelOptions channel_options;
  channel_options.timeout_ms = 30000;
  ASSERT_EQ(0, channel.Init(Address(*front_), &channel_options));
  TestService_Stub stub(&channel);
  CallResult blocking;
  blocking.request.set_message("b");
  blocking.request.set_block_ms(2000);
  blocking.request.add_items("block");
  stub.Echo(&blocking.controller, &blocking.request, &blocking.response, DoNothing());
  // While one thread sleeps for real, 64 proxied calls complete on the other one.
  const auto start = Clock::now();
  auto calls = CallConcurrently(Address(*front_), 64, kBackendDelayMs);
  const auto proxied_wall = Clock::now() - start;
  ExpectProxied(64, calls);
  EXPECT_LT(proxied_wall, 2000ms);  // before the blocked handler could have let go
  Join(blocking.controller.call_id());
  EXPECT_FALSE(blocking.controller.Failed()) << blocking.controller.ErrorText();
  EXPECT_EQ(blocking.response.message(), "blocked");
}

TEST_F(FiberProxyTest, SuspendedCallTimesOutAndIsCanceled) {
  StartFront();
  // The backend would answer after 1 s; the suspended calls end long before.
  auto timed_out = CallConcurrently(Address(*front_), 8, /*delay_ms=*/1000, "timeout");
  auto canceled = CallConcurrently(Address(*front_), 8, /*delay_ms=*/1000, "cancel");
  for (const auto* calls : {&timed_out, &canceled}) {
    for (const auto& call : *calls) {
      EXPECT_EQ(call->controller.ErrorCode(), calls == &timed_out ? ERPCTIMEDOUT : ECANCELED);
      EXPECT_LT(call->controller.latency_us(), 1'000'000);
    }
  }
}

TEST_F(FiberProxyTest, CallsPastMaxFibersGetElimit) {
  ServerOptions options;
  options.max_fibers = 4;
  StartFront(options);
  auto calls = CallConcurrently(Address(*front_), 12, /*delay_ms=*/500);
  int ok = 0, limited = 0;
  for (const auto& call : calls) {
    if (!call->controller.Failed()) ++ok;
    if (call->controller.ErrorCode() == ELIMIT) ++limited;
  }
  EXPECT_EQ(ok + limited, 12);
  EXPECT_GE(ok, 4);  // the first four at least; later ones once fibers were free again
  EXPECT_GE(limited, 1);
  const ServerStats stats = front_->GetServerStats();
  EXPECT_EQ(stats.rejected_fiber_limit, static_cast<uint64_t>(limited));
  EXPECT_EQ(front_->GetMethodStats("arenarpc.e2e.TestService.Echo").rejected, 0u + limited);
}

// max_fibers_per_connection: each connection's handlers hold at most that many fibers; its
// calls past it get ELIMIT naming the option while another connection gets its own share.
TEST_F(FiberProxyTest, CallsPastTheConnectionsFiberShareGetElimit) {
  ServerOptions options;
  options.max_fibers_per_connection = 4;
  StartFront(options);
  std::vector<std::unique_ptr<CallResult>> calls[2];
  {
    std::thread second([&] { calls[1] = CallConcurrently(Address(*front_), 12, 500); });
    calls[0] = CallConcurrently(Address(*front_), 12, 500);
    second.join();
  }
  int ok_total = 0;
  for (const auto& connection : calls) {
    int ok = 0, limited = 0;
    for (const auto& call : connection) {
      if (!call->controller.Failed()) ++ok;
      if (call->controller.ErrorCode() == ELIMIT) {
        ++limited;
        EXPECT_NE(call->controller.ErrorText().find("max_fibers_per_connection=4"),
                  std::string::npos) << call->controller.ErrorText();
      }
    }
    EXPECT_EQ(ok + limited, 12);
    EXPECT_GE(ok, 4);
    EXPECT_GE(limited, 1);
    ok_total += ok;
  }
  EXPECT_GE(ok_total, 8);  // a share per connection, not one for all
}

TEST_F(FiberProxyTest, StopWaitsForSuspendedHandlersAndLosesNoReply) {
  StartFront();
  Channel channel;
  ChannelOptions channel_options;
  channel_options.timeout_ms = 30000;
  ASSERT_EQ(0, channel.Init(Address(*front_), &channel_options));
  TestService_Stub stub(&channel);
  std::vector<std::unique_ptr<CallResult>> calls;
  for (int i = 0; i < 32; ++i) {
    auto call = std::make_unique<CallResult>();
    call->request.set_message("m" + std::to_string(i));
    call->request.set_delay_ms(1000);
    stub.Echo(&call->controller, &call->request, &call->response, DoNothing());
    calls.push_back(std::move(call));
  }
  for (int i = 0; i < 1000 && front_->GetServerStats().fibers < 32; ++i) {
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_EQ(front_->GetServerStats().fibers, 32);  // all suspended on the backend
  EXPECT_EQ(front_->Stop(), 0);
  for (auto& call : calls) Join(call->controller.call_id());
  ExpectProxied(32, calls);
  EXPECT_EQ(front_->Join(), 0);
  EXPECT_EQ(front_->GetServerStats().fibers, 0);
}

}  // namespace
}  // namespace arenarpc::e2e
