// Successful calls: sync and async handlers, two-phase completion, concurrency on many connections
// and on one, out-of-order replies, compression, attachments, user_fields, worker threads, stats.

#include <google/protobuf/stubs/callback.h>

#include <atomic>
#include <latch>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "arenarpc/error_codes.h"
#include "protocol/payload_codec.h"
#include "server_fixture.h"

namespace arenarpc::e2e {
namespace {

class CallsTest : public ServerTest {};
ARENARPC_ALL_MODES(CallsTest);

TestRequest MakeRequest(const std::string& message, int items = 3) {
  TestRequest request;
  request.set_message(message);
  for (int i = 0; i < items; ++i) request.add_items(message + "-item-" + std::to_string(i));
  return request;
}

TEST_P(CallsTest, SyncHandlerRoundTripWithAttachmentUserFieldsAndLogId) {
  StartServer();
  auto channel = MakeChannel();
  TestService_Stub stub(channel.get());
  for (int i = 0; i < 20; ++i) {
    Controller controller;
    controller.set_log_id(1000 + i);
    controller.request_attachment().Append("attachment-" + std::to_string(i));
    controller.request_user_fields()["k"] = "v" + std::to_string(i);
    TestRequest request = MakeRequest("hello-" + std::to_string(i));
    TestResponse response;
    stub.Echo(&controller, &request, &response, nullptr);
    ASSERT_FALSE(controller.Failed()) << controller.ErrorText();
    EXPECT_EQ(request.message(), response.message());
    EXPECT_EQ(3, response.items_size());
    EXPECT_EQ(request.items(2), response.items(2));
    EXPECT_EQ(1000 + i, response.log_id());
    EXPECT_EQ("attachment-" + std::to_string(i), controller.response_attachment().ToString());
    EXPECT_EQ("v" + std::to_string(i) + "-back", controller.response_user_fields()["k"]);
  }
  const MethodStats stats = server_->GetMethodStats("arenarpc.e2e.TestService.Echo");
  EXPECT_EQ("arenarpc.e2e.TestService.Echo", stats.full_name);
  EXPECT_EQ(GetParam(), stats.memory_mode);
  EXPECT_EQ(20u, stats.calls);
  EXPECT_EQ(0u, stats.errors);
  EXPECT_GT(stats.latency_max_us, 0);
  EXPECT_LE(stats.latency_p50_us, stats.latency_p99_us);
  EXPECT_LE(stats.latency_p99_us, stats.latency_max_us);
  EXPECT_GE(stats.memory.acquired, 20u);
  ExpectAllPairsReleased();
}

TEST_P(CallsTest, RawWireReplyHasBrpcShape) {
  StartServer();
  RawClient client(port_);
  ASSERT_TRUE(client.connected());
  TestRequest request = MakeRequest("wire", 1);
  RawRequest raw = RequestFor(&request);
  raw.attachment = "AB";
  RawReply reply = client.Call(raw);
  ASSERT_EQ(0, reply.error_code) << reply.error_text;
  EXPECT_TRUE(reply.frame.meta.has_response());
  EXPECT_TRUE(reply.frame.meta.response().has_error_code());
  EXPECT_FALSE(reply.frame.meta.response().has_error_text());
  EXPECT_EQ(2, reply.frame.meta.attachment_size());
  EXPECT_EQ("AB", reply.frame.attachment.ToString());
  TestResponse response;
  ASSERT_TRUE(ParseReply(reply, &response));
  EXPECT_EQ("wire", response.message());
}

// A connection's decoder keeps the request meta it parsed for the next request (small ones) or
// frees it (large ones): either way nothing of one request's meta reaches the next.
TEST_P(CallsTest, NothingOfARequestsMetaReachesTheNextOnItsConnection) {
  StartServer();
  RawClient client(port_);
  ASSERT_TRUE(client.connected());
  struct Case {
    std::map<std::string, std::string> user_fields;
    int64_t log_id;
  };
  const std::vector<Case> cases = {
      {{{"a", "1"}, {"b", "2"}}, 7},
      {{}, 0},
      {{{"big", std::string(16 << 10, 'x')}, {"a", "3"}}, 9},  // a meta past what is kept
      {{}, 0},
      {{{"c", "4"}}, 0},
      {{{"c", std::string(40, 'y')}}, 11},
      {{}, 0},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    TestRequest request = MakeRequest("meta " + std::to_string(i), 1);
    RawRequest raw = RequestFor(&request);
    raw.user_fields = cases[i].user_fields;
    raw.log_id = cases[i].log_id;
    RawReply reply = client.Call(raw);
    ASSERT_EQ(0, reply.error_code) << reply.error_text;
    std::map<std::string, std::string> back(reply.frame.meta.user_fields().begin(),
                                            reply.frame.meta.user_fields().end());
    std::map<std::string, std::string> expected;
    for (const auto& [key, value] : cases[i].user_fields) expected[key] = value + "-back";
    EXPECT_EQ(expected, back) << "request " << i;
    TestResponse response;
    ASSERT_TRUE(ParseReply(reply, &response));
    EXPECT_EQ(cases[i].log_id, response.log_id()) << "request " << i;
    EXPECT_EQ("meta " + std::to_string(i), response.message());
  }
}

TEST_P(CallsTest, ShortServiceNameResolves) {
  StartServer();
  RawClient client(port_);
  TestRequest request = MakeRequest("short", 0);
  RawRequest raw;
  raw.service = "TestService";
  raw.method = "Echo2";
  raw.message = &request;
  EXPECT_EQ(0, client.Call(raw).error_code);
  EXPECT_EQ(1u, server_->GetMethodStats("arenarpc.e2e.TestService.Echo2").calls);
}

TEST_P(CallsTest, AsyncHandlerCompletesFromAnotherThread) {
  StartServer();
  auto channel = MakeChannel();
  TestService_Stub stub(channel.get());
  for (int i = 0; i < 10; ++i) {
    Controller controller;
    TestRequest request = MakeRequest("async-" + std::to_string(i));
    request.set_async(true);
    request.set_delay_ms(i % 3);
    TestResponse response;
    stub.Echo(&controller, &request, &response, nullptr);
    ASSERT_FALSE(controller.Failed()) << controller.ErrorText();
    EXPECT_EQ(request.message(), response.message());
  }
  // Asynchronous client calls too: done runs on a channel thread.
  constexpr int kCalls = 16;
  std::latch finished(kCalls);
  std::vector<Controller> controllers(kCalls);
  std::vector<TestRequest> requests(kCalls);
  std::vector<TestResponse> responses(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    requests[i] = MakeRequest("client-async-" + std::to_string(i));
    requests[i].set_async(true);
    stub.Echo(&controllers[i], &requests[i], &responses[i],
              google::protobuf::NewCallback(
                  +[](std::latch* l) { l->count_down(); }, &finished));
  }
  finished.wait();
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_FALSE(controllers[i].Failed()) << controllers[i].ErrorText();
    EXPECT_EQ(requests[i].message(), responses[i].message());
  }
  ExpectAllPairsReleased();
}

TEST_P(CallsTest, TwoPhaseCompletionReleasesAfterBackgroundWork) {
  StartServer();
  auto channel = MakeChannel();
  TestService_Stub stub(channel.get());
  constexpr int kCalls = 5;
  for (int i = 0; i < kCalls; ++i) {
    Controller controller;
    TestRequest request = MakeRequest("two-phase-" + std::to_string(i));
    request.set_retain(true);
    TestResponse response;
    stub.Echo(&controller, &request, &response, nullptr);
    ASSERT_FALSE(controller.Failed()) << controller.ErrorText();
    EXPECT_EQ(request.message(), response.message());
  }
  // Every reply is in, yet the handlers still hold their pairs.
  MethodStats stats = server_->GetMethodStats("arenarpc.e2e.TestService.Echo");
  EXPECT_EQ(static_cast<uint64_t>(kCalls), stats.calls);
  EXPECT_EQ(static_cast<uint64_t>(kCalls), stats.memory.acquired);
  EXPECT_EQ(0u, stats.memory.released) << "released before the background work ended";
  EXPECT_EQ(0, service_->retained_checks_done());
  service_->ReleaseRetained();
  for (int i = 0; i < 500 && service_->retained_checks_done() < kCalls; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(kCalls, service_->retained_checks_passed());
  ExpectAllPairsReleased();
}

TEST_P(CallsTest, ManyConcurrentClients) {
  StartServer();
  const int kClients = 4 * kLoadScale / 2 + 2;
  const int kCallsEach = 25 * kLoadScale;
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      ChannelOptions options;
      options.connection_type = c % 2 == 0 ? "single" : "pooled";
      auto channel = MakeChannel(options);
      TestService_Stub stub(channel.get());
      for (int i = 0; i < kCallsEach; ++i) {
        Controller controller;
        TestRequest request = MakeRequest("c" + std::to_string(c) + "-" + std::to_string(i), i % 7);
        request.set_async(i % 2 == 1);
        TestResponse response;
        stub.Echo(&controller, &request, &response, nullptr);
        if (!controller.Failed() && response.message() == request.message() &&
            response.items_size() == request.items_size()) {
          ok.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(kClients * kCallsEach, ok.load());
  EXPECT_EQ(static_cast<uint64_t>(kClients * kCallsEach),
            server_->GetMethodStats("arenarpc.e2e.TestService.Echo").calls);
  EXPECT_GE(server_->GetServerStats().connections_accepted, static_cast<uint64_t>(kClients / 2));
  ExpectAllPairsReleased();
}

TEST_P(CallsTest, ManyInFlightOnOneConnectionRepliesOutOfOrder) {
  StartServer();
  RawClient client(port_);
  ASSERT_TRUE(client.connected());
  TestRequest slow = MakeRequest("slow", 1);
  slow.set_delay_ms(300);
  RawRequest raw_slow = RequestFor(&slow);
  const int64_t slow_id = client.Send(raw_slow);
  constexpr int kFast = 30;
  std::set<int64_t> fast_ids;
  std::vector<TestRequest> fast(kFast);
  for (int i = 0; i < kFast; ++i) {
    fast[i] = MakeRequest("fast-" + std::to_string(i), 2);
    fast[i].set_async(i % 2 == 0);
    RawRequest raw = RequestFor(&fast[i]);
    fast_ids.insert(client.Send(raw));
  }
  // Every fast reply overtakes the slow call sent first.
  std::set<int64_t> seen;
  for (int i = 0; i < kFast; ++i) {
    RawReply reply;
    ASSERT_TRUE(client.Read(&reply));
    EXPECT_EQ(0, reply.error_code) << reply.error_text;
    EXPECT_NE(slow_id, reply.correlation_id) << "slow call answered before a fast one";
    seen.insert(reply.correlation_id);
  }
  EXPECT_EQ(fast_ids, seen);
  RawReply last;
  ASSERT_TRUE(client.Read(&last));
  EXPECT_EQ(slow_id, last.correlation_id);
  EXPECT_EQ(0, last.error_code);
  ExpectAllPairsReleased();
}

TEST_P(CallsTest, CompressedPayloadsBothWays) {
  StartServer();
  auto channel = MakeChannel();
  TestService_Stub stub(channel.get());
  const std::string big(2000, 'z');  // compressible
  for (int request_type = 0; request_type <= 3; ++request_type) {
    for (int response_type = 0; response_type <= 3; ++response_type) {
      Controller controller;
      controller.set_request_compress_type(static_cast<CompressType>(request_type));
      TestRequest request = MakeRequest(big + std::to_string(request_type), 4);
      request.set_response_compress(response_type);
      TestResponse response;
      stub.Echo(&controller, &request, &response, nullptr);
      ASSERT_FALSE(controller.Failed())
          << request_type << "/" << response_type << ": " << controller.ErrorText();
      EXPECT_EQ(request.message(), response.message());
      EXPECT_EQ(4, response.items_size());
    }
  }
  // On the wire: the reply is compressed as the handler chose, not as the request was.
  RawClient client(port_);
  TestRequest request = MakeRequest(big, 1);
  request.set_response_compress(2);
  RawRequest raw = RequestFor(&request);
  raw.compress_type = 1;
  RawReply reply = client.Call(raw);
  ASSERT_EQ(0, reply.error_code) << reply.error_text;
  EXPECT_EQ(2, reply.compress_type);
  EXPECT_LT(reply.frame.payload.size(), big.size());
  TestResponse response;
  ASSERT_TRUE(ParseReply(reply, &response));
  EXPECT_EQ(big, response.message());
  ExpectAllPairsReleased();
  // reuse fits each request's kept tree to its (decompressed) bytes before the merge.
  const uint64_t shaped =
      server_->GetMethodStats("arenarpc.e2e.TestService.Echo").memory.requests_shaped;
  EXPECT_EQ(shaped, std::string(GetParam()) == "reuse" ? 17u : 0u);
}

TEST_P(CallsTest, WorkerThreadsRunHandlers) {
  ServerOptions options;
  options.worker_threads = 2;
  StartServer(options);
  auto channel = MakeChannel();
  TestService_Stub stub(channel.get());
  for (int i = 0; i < 10; ++i) {
    Controller controller;
    TestRequest request = MakeRequest("worker");
    request.set_report_thread(true);
    TestResponse response;
    stub.Echo(&controller, &request, &response, nullptr);
    ASSERT_FALSE(controller.Failed()) << controller.ErrorText();
    EXPECT_EQ(std::string::npos, response.thread_name().find("arenarpc-io"))
        << "handler ran on I/O thread " << response.thread_name();
  }
  // And by default, handlers run to completion on the I/O threads.
  server_.reset();
  StartServer();
  channel = MakeChannel();
  TestService_Stub stub2(channel.get());
  Controller controller;
  TestRequest request = MakeRequest("io");
  request.set_report_thread(true);
  TestResponse response;
  stub2.Echo(&controller, &request, &response, nullptr);
  ASSERT_FALSE(controller.Failed()) << controller.ErrorText();
  EXPECT_EQ(0u, response.thread_name().find("arenarpc-io")) << response.thread_name();
}

TEST_P(CallsTest, ClientTimeoutDropsTheLateReplyAndServerStillReleases) {
  StartServer();
  ChannelOptions options;
  options.timeout_ms = 50;
  auto channel = MakeChannel(options);
  TestService_Stub stub(channel.get());
  Controller controller;
  TestRequest request = MakeRequest("too slow");
  request.set_delay_ms(300);
  TestResponse response;
  stub.Echo(&controller, &request, &response, nullptr);
  EXPECT_TRUE(controller.Failed());
  EXPECT_EQ(ERPCTIMEDOUT, controller.ErrorCode()) << controller.ErrorText();
  // The server finishes the call anyway; the client drops the late reply; the pair goes back.
  for (int i = 0; i < 300 && channel->dropped_responses() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(1u, channel->dropped_responses());
  EXPECT_EQ(1u, server_->GetMethodStats("arenarpc.e2e.TestService.Echo").calls);
  ExpectAllPairsReleased();
  // The connection is still good for the next call.
  Controller next;
  next.set_timeout_ms(10000);  // answered: the channel's 50 ms is too short on a loaded machine
  TestRequest quick = MakeRequest("quick");
  stub.Echo(&next, &quick, &response, nullptr);
  EXPECT_FALSE(next.Failed()) << next.ErrorText();
}

TEST_P(CallsTest, PerMethodMemoryModeOverride) {
  ServerOptions options;
  const std::string other = std::string(GetParam()) == "reuse" ? "arena" : "reuse";
  options.method_memory_mode["arenarpc.e2e.TestService.Echo2"] = other;
  StartServer(options);
  RawClient client(port_);
  TestRequest request = MakeRequest("override", 2);
  RawRequest raw = RequestFor(&request);
  raw.method = "Echo2";
  EXPECT_EQ(0, client.Call(raw).error_code);
  raw.method = "Echo";
  EXPECT_EQ(0, client.Call(raw).error_code);
  EXPECT_EQ(other, server_->GetMethodStats("arenarpc.e2e.TestService.Echo2").memory_mode);
  EXPECT_EQ(GetParam(), server_->GetMethodStats("arenarpc.e2e.TestService.Echo").memory_mode);
  EXPECT_EQ(
      (std::vector<std::string>{"arenarpc.e2e.TestService.Echo", "arenarpc.e2e.TestService.Echo2"}),
      server_->ListMethods());
  EXPECT_TRUE(server_->GetMethodStats("no.Such.Method").full_name.empty());
}

}  // namespace
}  // namespace arenarpc::e2e
