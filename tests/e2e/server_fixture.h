#pragma once
// ServerTest: a fixture that runs the test service in one memory strategy (the test parameter),
// with a Channel and raw-socket clients to call it. Every e2e test runs in all four strategies.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "arenarpc/channel.h"
#include "arenarpc/controller.h"
#include "arenarpc/server.h"
#include "good_client.h"
#include "raw_client.h"
#include "test_service.h"

namespace arenarpc::e2e {

inline const char* const kAllModes[] = {"heap", "arena", "paged", "reuse"};

// Sanitizer builds run everything several times slower: scale the loads down there.
#if defined(ARENARPC_SANITIZED)
inline constexpr int kLoadScale = 1;
// How much longer a wait for the server's work may take (a fresh-clone TSan run, two tests at a
// time: the 8 gzip'd 24 MiB replies of one test took over the 3 s its release-sized wait allowed).
inline constexpr int kWaitScale = 5;
#else
inline constexpr int kLoadScale = 4;
inline constexpr int kWaitScale = 1;
#endif

class ServerTest : public ::testing::TestWithParam<const char*> {
 protected:
  void TearDown() override {
    server_.reset();   // Stop + Join: no handler starts after this
    service_.reset();  // completes delayed calls (their replies are dropped) and joins
  }

  // Starts the server on 127.0.0.1:<any> with the parameter's memory mode.
  void StartServer(ServerOptions options = {}) {
    options.memory_mode = GetParam();
    if (options.num_threads == 0) options.num_threads = 2;
    service_ = std::make_unique<TestServiceImpl>();
    server_ = std::make_unique<Server>();
    ASSERT_EQ(0, server_->AddService(service_.get(), SERVER_DOESNT_OWN_SERVICE))
        << server_->last_error();
    ASSERT_EQ(0, server_->Start("127.0.0.1:0", options)) << server_->last_error();
    port_ = server_->listen_port();
    ASSERT_GT(port_, 0);
  }

  std::unique_ptr<Channel> MakeChannel(ChannelOptions options = {}) {
    if (options.timeout_ms == 500) options.timeout_ms = 10000;  // sanitizer builds are slow
    auto channel = std::make_unique<Channel>();
    EXPECT_EQ(0, channel->Init("127.0.0.1:" + std::to_string(port_), &options))
        << channel->last_error();
    return channel;
  }

  // A good client on a channel of its own (10 s timeout), calling Echo until stopped.
  std::unique_ptr<GoodClient> StartGoodClient() {
    ChannelOptions options;
    options.timeout_ms = 10000;
    return std::make_unique<GoodClient>(MakeChannel(options));
  }

  // Hostile tests: starts good_ and measures its unattacked p99 (meter_.Begin); what follows is
  // the attack.
  void StartMeasuredGoodClient() {
    good_ = StartGoodClient();
    meter_.Begin(good_.get());
  }
  // Ends the attack: the good client kept up (ExpectKeptUp) and the peak RSS growth stayed
  // within `bound`; then it stops, with 0 failures.
  void StopMeasuredGoodClient(uint64_t bound) {
    meter_.Finish(bound, GetParam());
    good_.reset();
  }

  // True once `n` calls are admitted and unanswered (e.g. sitting in slow handlers).
  bool WaitForInFlight(int64_t n) {
    for (int i = 0; i < 1000; ++i) {
      if (server_->GetServerStats().in_flight >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  }

  // A server counter once it reaches `expected` (or its value after 5 s): counters are bumped by
  // the connection's thread, which may still be on its way when the client sees the close.
  uint64_t StatSoon(uint64_t ServerStats::*counter, uint64_t expected,
                    std::chrono::seconds within = std::chrono::seconds(5)) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    uint64_t value = server_->GetServerStats().*counter;
    while (value != expected && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      value = server_->GetServerStats().*counter;
    }
    return value;
  }

  std::string Identity() const { return "[127.0.0.1:" + std::to_string(port_) + "]"; }

  // Every pair the strategy handed out went back (two-phase calls included), soon.
  void ExpectAllPairsReleased(const std::string& method = "arenarpc.e2e.TestService.Echo") {
    MethodStats stats;
    for (int i = 0; i < 500; ++i) {
      stats = server_->GetMethodStats(method);
      if (stats.memory.acquired == stats.memory.released) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(stats.memory.acquired, stats.memory.released) << "mode " << GetParam();
  }

  std::unique_ptr<TestServiceImpl> service_;
  std::unique_ptr<Server> server_;
  int port_ = -1;
  std::unique_ptr<GoodClient> good_;  // StartMeasuredGoodClient
  AttackMeter meter_;
};

// One synchronous Echo of `message` over `channel`; the outcome is on *controller.
inline TestResponse EchoOnce(google::protobuf::RpcChannel* channel, const std::string& message,
                             Controller* controller) {
  TestService_Stub stub(channel);
  TestRequest request;
  request.set_message(message);
  TestResponse response;
  stub.Echo(controller, &request, &response, nullptr);
  return response;
}

// One Echo call of `message` over `channel`: "" when it came back, else what went wrong.
inline std::string CallEcho(google::protobuf::RpcChannel* channel, const std::string& message) {
  Controller controller;
  const TestResponse response = EchoOnce(channel, message, &controller);
  if (controller.Failed()) return controller.ErrorText();
  return response.message() == message ? "" : "echoed '" + response.message() + "'";
}

inline std::string ModeName(const ::testing::TestParamInfo<const char*>& info) {
  return info.param;
}

#define ARENARPC_ALL_MODES(fixture) \
  INSTANTIATE_TEST_SUITE_P(AllModes, fixture, ::testing::ValuesIn(::arenarpc::e2e::kAllModes), \
                           ::arenarpc::e2e::ModeName)

}  // namespace arenarpc::e2e
