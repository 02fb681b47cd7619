// Every strategy (and gRPC's default) end to end over loopback gRPC, through both request paths:
// ServiceMemory::Serve (merge-parse) and the generated SetMessageAllocatorFor_Echo (gRPC's parse).
// Each test shuts the server down and checks that every holder handed to gRPC was released
// exactly once (holders and strategy pairs: allocated == released); ASan/TSan builds check that
// nothing is touched after release.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "arenarpc/grpc_memory/service_memory.h"
#include "e2e_support.h"
#include "echo/payload_generator.h"
#include "grpc_echo/grpc_echo.grpc.pb.h"

namespace arenarpc::grpc_memory {
namespace {

using example::EchoRequest;
using example::EchoResponse;
using example::GrpcEchoService;
using namespace std::chrono_literals;

constexpr char kDelayPrefix[] = "delay:";

// The workload's echo, plus: a request whose first message is "delay:<ms>" is answered from a
// worker thread after that long (reading the request then), whether or not the call was cancelled.
class TestEchoService final : public GrpcEchoService::CallbackService {
 public:
  TestEchoService() : worker_([this] { Run(); }) {}
  ~TestEchoService() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  ::grpc::ServerUnaryReactor* Echo(::grpc::CallbackServerContext* context,
                                   const EchoRequest* request, EchoResponse* response) override {
    ::grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    calls_received_.fetch_add(1);
    {
      std::lock_guard lock(mu_);
      payload_addresses_.insert(&request->payload());
    }
    if (request->message_size() > 0 && request->message(0).starts_with(kDelayPrefix)) {
      const int ms = std::stoi(request->message(0).substr(sizeof(kDelayPrefix) - 1));
      std::lock_guard lock(mu_);
      delayed_.emplace(std::chrono::steady_clock::now() + std::chrono::milliseconds(ms),
                       Pending{context, reactor, request, response});
      cv_.notify_all();
      return reactor;
    }
    Answer(context, reactor, request, response);
    return reactor;
  }

  int calls_received() const { return calls_received_.load(); }

  size_t distinct_payload_addresses() {
    std::lock_guard lock(mu_);
    return payload_addresses_.size();
  }

 private:
  struct Pending {
    ::grpc::CallbackServerContext* context;
    ::grpc::ServerUnaryReactor* reactor;
    const EchoRequest* request;
    EchoResponse* response;
  };

  static void Answer(::grpc::CallbackServerContext* context, ::grpc::ServerUnaryReactor* reactor,
                     const EchoRequest* request, EchoResponse* response) {
    // Unlike the workload's handler, leaves `payload` unset when the request has none, so that
    // presence on the wire shows whether the strategy prepared both messages (no handler call).
    if (request->has_payload()) response->mutable_payload()->CopyFrom(request->payload());
    reactor->Finish(::grpc::Status::OK);
  }

  // Finishes delayed calls when due; on stop, finishes whatever is left at once.
  void Run() {
    std::unique_lock lock(mu_);
    for (;;) {
      if (delayed_.empty()) {
        if (stopping_) return;
        cv_.wait(lock);
        continue;
      }
      auto first = delayed_.begin();
      if (!stopping_ && cv_.wait_until(lock, first->first) != std::cv_status::timeout) continue;
      Pending pending = first->second;
      delayed_.erase(first);
      lock.unlock();
      Answer(pending.context, pending.reactor, pending.request, pending.response);
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<std::chrono::steady_clock::time_point, Pending> delayed_;
  std::set<const void*> payload_addresses_;
  bool stopping_ = false;
  std::atomic<int> calls_received_{0};
  std::thread worker_;
};

// gRPC 1.51 on Linux runs every callback (client and server) on one process-wide "callback
// alternative" completion queue, created on first use and torn down when the last server or
// channel using it goes away. Tearing it down while a call's completion is still unwinding and
// recreating it for the next test crashed here (double free in grpc_cq_internal_unref, ~1 run in
// 8), so the tests keep it alive for the whole process with one idle channel that has made a
// callback call. A long-lived server process never recreates it. The channel is never destroyed
// either: gtest deletes its environments during static destruction, and dropping the last
// reference there tore the queue down while gRPC's threads still ran (the same double free at
// exit, ~1 run in 20 under ASan with two test processes at once).
class KeepCallbackQueueAlive : public ::testing::Environment {
 public:
  void SetUp() override {
    static auto* const channel = new std::shared_ptr<::grpc::Channel>(  // intentionally leaked
        ::grpc::CreateChannel("127.0.0.1:1", ::grpc::InsecureChannelCredentials()));
    auto stub = GrpcEchoService::NewStub(*channel);
    ::grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 1ms);
    EchoRequest request;
    EchoResponse response;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    stub->async()->Echo(&context, &request, &response, [&](::grpc::Status) {
      std::lock_guard lock(mu);
      done = true;
      cv.notify_all();
    });
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return done; });
  }
};
const auto* const kKeepCallbackQueueAlive =
    ::testing::AddGlobalTestEnvironment(new KeepCallbackQueueAlive);  // gtest owns it

// One client call of the tests that keep several in flight.
struct PendingCall {
  EchoRequest request;
  ::grpc::ClientContext context;
  EchoResponse response;
};

class GrpcEndToEnd : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const auto& [mode, path] = GetParam();
    memory_ = std::make_unique<ServiceMemory>(mode);
    service_ = std::make_unique<TestEchoService>();
    ServeEcho(*memory_, *service_, path);
    int port = 0;
    ::grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", ::grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    target_ = "127.0.0.1:" + std::to_string(port);
    channel_ = ::grpc::CreateChannel(target_, ::grpc::InsecureChannelCredentials());
    stub_ = GrpcEchoService::NewStub(channel_);
  }

  void TearDown() override {
    if (server_) StopServer();
    service_.reset();
  }

  // Shuts down (cancelling calls in flight), then checks every holder came back exactly once.
  void StopServer(std::chrono::milliseconds grace = 5000ms) {
    server_calls_ = ShutDownAndExpectAllReleased(*server_, *memory_, grace).allocated;
    server_.reset();
  }

  bool is_default() const { return std::get<0>(GetParam()) == "default"; }
  bool merges() const { return std::get<1>(GetParam()) == "merge"; }

  static EchoRequest Draw(example::PayloadGenerator& generator) {
    EchoRequest request;
    generator.Fill(&request);
    return request;
  }

  static void SetDeadline(::grpc::ClientContext& context, std::chrono::milliseconds timeout) {
    context.set_deadline(std::chrono::system_clock::now() + timeout);
  }

  std::unique_ptr<ServiceMemory> memory_;
  std::unique_ptr<TestEchoService> service_;
  std::unique_ptr<::grpc::Server> server_;
  std::string target_;
  std::shared_ptr<::grpc::Channel> channel_;
  std::unique_ptr<GrpcEchoService::Stub> stub_;
  uint64_t server_calls_ = 0;
};

TEST_P(GrpcEndToEnd, SyncClientEchoesEveryPayload) {
  example::PayloadGenerator generator(4, 1);
  constexpr int kCalls = 20;
  for (int i = 0; i < kCalls; ++i) {
    const EchoRequest request = Draw(generator);
    EchoResponse response;
    ::grpc::ClientContext context;
    SetDeadline(context, 10s);
    const ::grpc::Status status = stub_->Echo(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.payload().SerializeAsString(), request.payload().SerializeAsString());
    EXPECT_EQ(response.has_payload(), true);
    EXPECT_EQ(response.message_size(), 0);  // the handler copies the payload only
  }
  StopServer();
  if (!is_default()) {
    EXPECT_EQ(server_calls_, uint64_t{kCalls});
  }
  if (std::get<0>(GetParam()) == "reuse") {
    if (merges()) {
      // Only the request is pooled (the response is on a paged arena); a call may arrive before
      // the previous one's pair is back in the pool, which then makes another object.
      EXPECT_GE(memory_->memory_stats().reuses, uint64_t{kCalls / 2});
    } else {
      // gRPC's own parse (Clear() then parse) fills the request, not the strategy's: a request on
      // an arena of its own (ReuseSettings::request_arenas) is then destroyed at release, not
      // pooled, since Clear() on an arena lets sub-messages go that the arena keeps.
      EXPECT_EQ(memory_->memory_stats().reuses, 0u);
      EXPECT_EQ(memory_->memory_stats().rebuilds, uint64_t{kCalls});
    }
    // Sequential calls: with merge-parse the request's payload sub-message is the pooled one.
    if (merges()) {
      EXPECT_LE(service_->distinct_payload_addresses(), 2u);
      EXPECT_EQ(memory_->memory_stats().requests_shaped, uint64_t{kCalls});
      // EchoResponse.payload has no `optional`: exact reuse makes the response on a paged arena
      // (ReuseSettings::arena_responses), so there is no pooled response to mirror.
      EXPECT_EQ(memory_->memory_stats().responses_mirrored, 0u);
      EXPECT_GT(memory_->memory_stats().page_allocations, 0u);
    }
  }
}

// A request without payload after one with a large payload: with the reuse strategy both the
// request and the response objects carry a kept payload tree; settling must make the handler see
// has_payload() == false and send no payload, exactly as with heap messages.
TEST_P(GrpcEndToEnd, PresenceSurvivesKeptTrees) {
  example::PayloadGenerator generator(4, 2);
  for (int i = 0; i < 6; ++i) {
    const EchoRequest request = i % 2 == 0 ? Draw(generator) : EchoRequest();
    EchoResponse response;
    ::grpc::ClientContext context;
    SetDeadline(context, 10s);
    ASSERT_TRUE(stub_->Echo(&context, request, &response).ok());
    EXPECT_EQ(response.has_payload(), request.has_payload()) << "call " << i;
    EXPECT_EQ(response.payload().SerializeAsString(), request.payload().SerializeAsString());
  }
}

// gzip-compressed requests reach the deserializer already inflated by gRPC's filter.
TEST_P(GrpcEndToEnd, CompressedRequests) {
  example::PayloadGenerator generator(4, 9);
  for (grpc_compression_algorithm algorithm : {GRPC_COMPRESS_GZIP, GRPC_COMPRESS_DEFLATE}) {
    const EchoRequest request = Draw(generator);
    EchoResponse response;
    ::grpc::ClientContext context;
    SetDeadline(context, 10s);
    context.set_compression_algorithm(algorithm);
    const ::grpc::Status status = stub_->Echo(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.payload().SerializeAsString(), request.payload().SerializeAsString());
  }
}

TEST_P(GrpcEndToEnd, ManyConcurrentCallbackCalls) {
  constexpr int kCalls = 240;
  constexpr int kInFlight = 48;
  std::vector<EchoRequest> requests;
  example::PayloadGenerator generator(3, 3);
  for (int i = 0; i < 16; ++i) requests.push_back(Draw(generator));

  const ConcurrentCallsResult result =
      RunConcurrentEchoCalls(*stub_, requests, kCalls, kInFlight, [](int) { return 20s; });
  EXPECT_EQ(result.failed, 0);
  EXPECT_EQ(result.mismatches, 0);
  StopServer();
  if (!is_default()) {
    EXPECT_EQ(server_calls_, uint64_t{kCalls});
  }
}

TEST_P(GrpcEndToEnd, DeadlinesAndCancellationsReleaseOnce) {
  example::PayloadGenerator generator(3, 4);
  constexpr int kCalls = 24;
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::map<::grpc::StatusCode, int> codes;
  std::vector<std::unique_ptr<PendingCall>> calls;
  for (int i = 0; i < kCalls; ++i) {
    auto call = std::make_unique<PendingCall>();
    call->request = Draw(generator);
    // The server answers after 300 ms; a third time out at 40 ms, a third are cancelled, a third
    // get their answer.
    call->request.add_message(std::string(kDelayPrefix) + "300");
    SetDeadline(call->context, i % 3 == 0 ? 40ms : 20s);
    calls.push_back(std::move(call));
  }
  for (auto& call : calls) {
    stub_->async()->Echo(&call->context, &call->request, &call->response,
                         [&](::grpc::Status status) {
                           std::lock_guard lock(mu);
                           ++codes[status.error_code()];
                           ++done;
                           cv.notify_all();
                         });
  }
  std::this_thread::sleep_for(60ms);
  for (int i = 0; i < kCalls; ++i) {
    if (i % 3 == 1) calls[i]->context.TryCancel();
  }
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 20s, [&] { return done == kCalls; }));
  }
  EXPECT_EQ(codes[::grpc::StatusCode::DEADLINE_EXCEEDED], kCalls / 3);
  EXPECT_EQ(codes[::grpc::StatusCode::CANCELLED], kCalls / 3);
  EXPECT_EQ(codes[::grpc::StatusCode::OK], kCalls / 3);
  StopServer();  // waits for the delayed (cancelled) calls to finish server-side too
  if (!is_default()) {
    EXPECT_GT(server_calls_, 0u);
    EXPECT_LE(server_calls_, uint64_t{kCalls});
  }
}

// A payload that does not parse: gRPC fails the call, the holder still comes back once.
TEST_P(GrpcEndToEnd, MalformedRequestIsRejectedAndReleased) {
  ::grpc::GenericStub generic(channel_);
  const std::string garbage("\x12\x7f\x01\x02", 4);  // payload field longer than the message
  ::grpc::Slice slice(garbage);
  ::grpc::ByteBuffer request(&slice, 1);
  ::grpc::ByteBuffer response;
  ::grpc::ClientContext context;
  SetDeadline(context, 10s);
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  ::grpc::Status result;
  generic.UnaryCall(&context, "/arenarpc.example.GrpcEchoService/Echo", ::grpc::StubOptions(),
                    &request, &response, [&](::grpc::Status status) {
                      std::lock_guard lock(mu);
                      result = status;
                      done = true;
                      cv.notify_all();
                    });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return done; }));
  }
  EXPECT_FALSE(result.ok());
  // The service stays usable.
  EchoResponse echo;
  ::grpc::ClientContext ok_context;
  SetDeadline(ok_context, 10s);
  EXPECT_TRUE(stub_->Echo(&ok_context, EchoRequest(), &echo).ok());
  StopServer();
  if (!is_default()) {
    EXPECT_EQ(server_calls_, 2u);
  }
}

// Shutdown while calls wait in the handler: gRPC cancels them, the handler still finishes them,
// and every holder is released before Wait() returns.
TEST_P(GrpcEndToEnd, ShutdownWithCallsInFlight) {
  constexpr int kCalls = 12;
  std::atomic<int> done{0};
  std::vector<std::unique_ptr<PendingCall>> calls;
  for (int i = 0; i < kCalls; ++i) {
    auto call = std::make_unique<PendingCall>();
    call->request.add_message(std::string(kDelayPrefix) + "200");
    SetDeadline(call->context, 20s);
    stub_->async()->Echo(&call->context, &call->request, &call->response,
                         [&done](::grpc::Status) { done.fetch_add(1); });
    calls.push_back(std::move(call));
  }
  for (int i = 0; i < 1000 && service_->calls_received() < kCalls; ++i) {
    std::this_thread::sleep_for(5ms);  // let them reach the handler
  }
  ASSERT_EQ(service_->calls_received(), kCalls);
  StopServer(10ms);
  if (!is_default()) {
    EXPECT_EQ(server_calls_, uint64_t{kCalls});
  }
  for (int i = 0; i < 200 && done.load() < kCalls; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(done.load(), kCalls);
}

INSTANTIATE_TEST_SUITE_P(Modes, GrpcEndToEnd,
                         ::testing::Combine(::testing::Values("default", "heap", "arena", "paged",
                                                              "reuse"),
                                            ::testing::Values("merge", "grpc")),
                         ParamName);

}  // namespace
}  // namespace arenarpc::grpc_memory
