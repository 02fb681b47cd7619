// ReleaseAtSerializeInterceptorFactory end to end: with the interceptor, a call finished with OK
// has its messages back in the strategy before gRPC runs OnDone; a call finished with an error
// keeps them until gRPC releases the holder; every holder and pair is released exactly once, also
// with many calls in flight and with calls whose client gave up. Linked into grpc_e2e_test (it
// shares that binary's KeepCallbackQueueAlive environment).
#include "arenarpc/grpc_memory/release_at_serialize.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
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

// Echoes the payload, or fails the call when the request's first message is "fail". Each call's
// reactor records, in OnDone, whether the strategy had every pair back at that moment.
class RecordingEchoService final : public GrpcEchoService::CallbackService {
 public:
  explicit RecordingEchoService(const ServiceMemory& memory) : memory_(memory) {}

  ::grpc::ServerUnaryReactor* Echo(::grpc::CallbackServerContext* context,
                                   const EchoRequest* request, EchoResponse* response) override {
    const bool fail = request->message_size() > 0 && request->message(0) == "fail";
    auto* reactor = std::make_unique<Reactor>(this).release();  // deletes itself in OnDone
    if (fail) {
      reactor->Finish(::grpc::Status(::grpc::StatusCode::FAILED_PRECONDITION, "asked to fail"));
    } else {
      response->mutable_payload()->CopyFrom(request->payload());
      reactor->Finish(::grpc::Status::OK);  // nothing below touches request or response
    }
    return reactor;
  }

  // One entry per finished call, in OnDone order: were all pairs back in the strategy?
  std::vector<bool> returned_before_done() {
    std::lock_guard lock(mu_);
    return returned_before_done_;
  }

 private:
  class Reactor final : public ::grpc::ServerUnaryReactor {
   public:
    explicit Reactor(RecordingEchoService* service) : service_(service) {}
    void OnDone() override {
      std::unique_ptr<Reactor> self(this);
      const memory::MemoryStats stats = service_->memory_.memory_stats();
      std::lock_guard lock(service_->mu_);
      service_->returned_before_done_.push_back(stats.released == stats.acquired);
    }

   private:
    RecordingEchoService* service_;
  };

  const ServiceMemory& memory_;
  std::mutex mu_;
  std::vector<bool> returned_before_done_;
};

class ReleaseAtSerialize : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const auto& [mode, path] = GetParam();
    memory_ = std::make_unique<ServiceMemory>(mode);
    service_ = std::make_unique<RecordingEchoService>(*memory_);
    ServeEcho(*memory_, *service_, path);
    int port = 0;
    ::grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", ::grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    std::vector<std::unique_ptr<::grpc::experimental::ServerInterceptorFactoryInterface>> creators;
    creators.push_back(ReleaseAtSerializeInterceptorFactory());
    builder.experimental().SetInterceptorCreators(std::move(creators));
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = GrpcEchoService::NewStub(::grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                           ::grpc::InsecureChannelCredentials()));
  }

  // Shuts down, then checks every holder and pair came back exactly once.
  HolderStats StopServer() {
    const HolderStats holders = ShutDownAndExpectAllReleased(*server_, *memory_, 5s);
    server_.reset();
    return holders;
  }

  ::grpc::Status Call(const EchoRequest& request, EchoResponse* response,
                      std::chrono::milliseconds timeout = 10s) {
    ::grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout);
    return stub_->Echo(&context, request, response);
  }

  std::unique_ptr<ServiceMemory> memory_;
  std::unique_ptr<RecordingEchoService> service_;
  std::unique_ptr<::grpc::Server> server_;
  std::unique_ptr<GrpcEchoService::Stub> stub_;
};

TEST_P(ReleaseAtSerialize, OkCallsReturnTheirMessagesBeforeOnDone) {
  example::PayloadGenerator generator(4, 11);
  constexpr int kCalls = 12;
  std::vector<bool> expected;
  for (int i = 0; i < kCalls; ++i) {  // one at a time: OnDone runs before the next call starts
    EchoRequest request;
    generator.Fill(&request);
    const bool fail = i % 4 == 3;
    if (fail) request.add_message("fail");
    EchoResponse response;
    const ::grpc::Status status = Call(request, &response);
    if (fail) {
      EXPECT_EQ(status.error_code(), ::grpc::StatusCode::FAILED_PRECONDITION);
    } else {
      ASSERT_TRUE(status.ok()) << status.error_message();
      EXPECT_EQ(response.payload().SerializeAsString(), request.payload().SerializeAsString());
    }
    expected.push_back(!fail);  // an error status sends no message: released by gRPC later
    // The client can have its answer before gRPC has run OnDone and released the holder: wait
    // for both, so that each call's OnDone sees only its own pair.
    for (int spin = 0; spin < 5000 && memory_->holder_stats().released < expected.size(); ++spin) {
      std::this_thread::sleep_for(1ms);
    }
  }
  const HolderStats holders = StopServer();
  EXPECT_EQ(service_->returned_before_done(), expected);
  EXPECT_EQ(holders.allocated, uint64_t{kCalls});
  EXPECT_EQ(holders.released_at_serialize, uint64_t{kCalls - kCalls / 4});
}

TEST_P(ReleaseAtSerialize, ManyCallsInFlightAndAbandonedOnes) {
  constexpr int kCalls = 160;
  constexpr int kInFlight = 32;
  example::PayloadGenerator generator(3, 12);
  std::vector<EchoRequest> requests(8);
  for (auto& request : requests) generator.Fill(&request);

  // Every 10th call gives up almost at once: the server may still finish it with OK.
  const ConcurrentCallsResult result = RunConcurrentEchoCalls(
      *stub_, requests, kCalls, kInFlight, [](int i) { return i % 10 == 9 ? 1ms : 20000ms; });
  EXPECT_EQ(result.mismatches, 0);
  EXPECT_GE(result.ok, kCalls - kCalls / 10);
  const HolderStats holders = StopServer();
  EXPECT_GE(holders.released_at_serialize, static_cast<uint64_t>(result.ok));
}

INSTANTIATE_TEST_SUITE_P(Strategies, ReleaseAtSerialize,
                         ::testing::Combine(::testing::Values("heap", "arena", "paged", "reuse"),
                                            ::testing::Values("merge", "grpc")),
                         ParamName);

}  // namespace
}  // namespace arenarpc::grpc_memory
