// arenarpc_press's gRPC transport against an in-process grpc echo server (reuse strategy,
// merge-parse): registry lookup, many calls in flight, payload echoed, Drain, errors.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "arenarpc/error_codes.h"
#include "arenarpc/grpc_memory/service_memory.h"
#include "echo/payload_generator.h"
#include "grpc_echo/echo_service.h"
#include "press/grpc_transport.h"
#include "press/request_source.h"

namespace arenarpc::press {
namespace {

class GrpcTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_EQ(0, memory_.Serve(service_, "arenarpc.example.GrpcEchoService.Echo",
                               &example::GrpcEchoServiceImpl::Echo, &error))
        << error;
    int port = 0;
    ::grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", ::grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    address_ = "127.0.0.1:" + std::to_string(port);
  }
  void TearDown() override {
    server_->Shutdown();
    server_->Wait();
    const arenarpc::grpc_memory::HolderStats holders = memory_.holder_stats();
    EXPECT_EQ(holders.allocated, holders.released);
  }

  arenarpc::grpc_memory::ServiceMemory memory_{"reuse"};
  example::GrpcEchoServiceImpl service_;
  std::unique_ptr<::grpc::Server> server_;
  std::string address_;
};

TEST_F(GrpcTransportTest, EchoesEveryPayloadWithManyCallsInFlight) {
  std::unique_ptr<Transport> transport = MakeTransport("grpc");
  ASSERT_NE(transport, nullptr) << "grpc transport not registered";
  TransportOptions options;
  options.server = address_;
  options.connections = 2;
  options.timeout_ms = 10000;
  std::string error;
  ASSERT_TRUE(transport->Init(options, &error)) << error;

  example::PayloadGenerator generator(3, 42);
  constexpr int kCalls = 40;
  std::vector<PressRequest> requests(kCalls);
  for (auto& request : requests) DrawRequest(generator, &request);
  std::mutex mu;
  int ok = 0, echoed = 0;
  std::atomic<int> done{0};
  for (int i = 0; i < kCalls; ++i) {
    transport->Send(requests[i], [&, i](const CallResult& result) {
      std::lock_guard lock(mu);
      ok += result.error_code == 0 ? 1 : 0;
      echoed += result.response_payload == requests[i].echo.payload() ? 1 : 0;
      done.fetch_add(1);
    });
  }
  transport->Drain();
  EXPECT_EQ(done.load(), kCalls);  // Drain returned after every callback
  EXPECT_EQ(ok, kCalls);
  EXPECT_EQ(echoed, kCalls);
  EXPECT_EQ(memory_.holder_stats().allocated, uint64_t{kCalls});
}

TEST_F(GrpcTransportTest, InitFailsClearly) {
  auto transport = MakeGrpcTransport();
  TransportOptions options;
  options.server = "127.0.0.1:1";  // nothing listens there
  options.timeout_ms = 200;
  std::string error;
  EXPECT_FALSE(transport->Init(options, &error));
  EXPECT_NE(error.find("127.0.0.1:1"), std::string::npos) << error;

  options.server = address_;
  options.connection_type = "short";
  error.clear();
  EXPECT_FALSE(MakeGrpcTransport()->Init(options, &error));
  EXPECT_NE(error.find("short"), std::string::npos) << error;
}

TEST(GrpcStatusMapping, ToPressErrorCodes) {
  EXPECT_EQ(GrpcStatusToErrorCode(::grpc::StatusCode::OK), 0);
  EXPECT_EQ(GrpcStatusToErrorCode(::grpc::StatusCode::DEADLINE_EXCEEDED), ERPCTIMEDOUT);
  EXPECT_EQ(GrpcStatusToErrorCode(::grpc::StatusCode::UNAVAILABLE), EFAILEDSOCKET);
  EXPECT_EQ(GrpcStatusToErrorCode(::grpc::StatusCode::UNIMPLEMENTED), ENOMETHOD);
  EXPECT_EQ(GrpcStatusToErrorCode(::grpc::StatusCode::DATA_LOSS), EINTERNAL);
}

}  // namespace
}  // namespace arenarpc::press
