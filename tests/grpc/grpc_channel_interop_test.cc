// arenarpc::Channel with protocol "grpc" calling Debian's gRPC C++ 1.51 server: unary calls,
// metadata both ways, gzip both ways, gRPC statuses mapped back to brpc codes, grpc-timeout and
// deadline, cancellation seen by the server, a request past the server's limit, a response past
// the channel's, many concurrent calls on one connection under the server's
// MAX_CONCURRENT_STREAMS, and an rr cluster of two gRPC servers.
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/method_handler.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/impl/codegen/rpc_service_method.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/callback.h"
#include "arenarpc/channel.h"
#include "arenarpc/error_codes.h"
#include "e2e_test.pb.h"

namespace arenarpc {
namespace {

using e2e::TestRequest;
using e2e::TestResponse;

// TestService.Echo on gRPC's own server, with the arenarpc test service's knobs: fail_code is a
// gRPC status here; metadata comes back with "-back" (and as "<name>-trailer" in the trailers);
// delay_ms waits (watching for cancellation).
class GrpcTestService : public grpc::Service {
 public:
  GrpcTestService() {
    AddMethod(new grpc::internal::RpcServiceMethod(
        "/arenarpc.e2e.TestService/Echo", grpc::internal::RpcMethod::NORMAL_RPC,
        new grpc::internal::RpcMethodHandler<GrpcTestService, TestRequest, TestResponse>(
            [](GrpcTestService* self, grpc::ServerContext* context, const TestRequest* request,
               TestResponse* response) { return self->Echo(context, request, response); },
            this)));
  }
  std::atomic<int> calls{0}, canceled{0};
  std::atomic<int64_t> last_deadline_ms{-1};

 private:
  grpc::Status Echo(grpc::ServerContext* context, const TestRequest* request,
                    TestResponse* response) {
    ++calls;
    const auto left = context->deadline() - std::chrono::system_clock::now();
    last_deadline_ms = std::chrono::duration_cast<std::chrono::milliseconds>(left).count();
    for (const auto& [key, value] : context->client_metadata()) {
      const std::string name(key.data(), key.size());
      if (name.rfind("x-", 0) == 0) {
        context->AddInitialMetadata(name, std::string(value.data(), value.size()) + "-back");
        context->AddTrailingMetadata(name + "-trailer", "t");
      }
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(request->delay_ms());
    while (std::chrono::steady_clock::now() < until) {
      if (context->IsCancelled()) {
        ++canceled;
        return grpc::Status::CANCELLED;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (request->fail_code() != 0) {
      return grpc::Status(static_cast<grpc::StatusCode>(request->fail_code()), request->fail_text());
    }
    if (request->response_compress() == 2) context->set_compression_algorithm(GRPC_COMPRESS_GZIP);
    response->set_message(request->response_bytes() > 0
                              ? std::string(static_cast<size_t>(request->response_bytes()), 'r')
                              : request->message());
    for (const auto& item : request->items()) response->add_items(item);
    return grpc::Status::OK;
  }
};

struct GrpcServer {
  explicit GrpcServer(int max_streams = 0) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    builder.SetMaxReceiveMessageSize(64 << 10);
    if (max_streams > 0) builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, max_streams);
    server = builder.BuildAndStart();
  }
  ~GrpcServer() { server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1)); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
  GrpcTestService service;
  int port = 0;
  std::unique_ptr<grpc::Server> server;
};

std::unique_ptr<Channel> GrpcChannel(const std::string& address, ChannelOptions options = {},
                                     const char* balancer = nullptr) {
  options.protocol = "h2:grpc";  // brpc's name
  if (options.timeout_ms == 500) options.timeout_ms = 10000;
  auto channel = std::make_unique<Channel>();
  const int rv = balancer != nullptr ? channel->Init(address.c_str(), balancer, &options)
                                     : channel->Init(address, &options);
  EXPECT_EQ(0, rv) << channel->last_error();
  return channel;
}

TEST(GrpcChannelInterop, UnaryMetadataGzipStatusesAndLimits) {
  GrpcServer server;
  ASSERT_GT(server.port, 0);
  ChannelOptions options;
  options.max_body_size = 128u << 10;
  auto channel = GrpcChannel(server.address(), options);
  e2e::TestService_Stub stub(channel.get());
  {
    Controller cntl;
    cntl.request_user_fields()["x-trace"] = "t1";
    cntl.set_request_compress_type(COMPRESS_TYPE_GZIP);
    TestRequest request;
    request.set_message(std::string(5000, 'a'));
    request.add_items("i1");
    request.set_response_compress(2);
    TestResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
    EXPECT_EQ(request.message(), response.message());
    EXPECT_EQ(1, response.items_size());
    EXPECT_EQ("t1-back", cntl.response_user_fields()["x-trace"]);
    EXPECT_EQ("t", cntl.response_user_fields()["x-trace-trailer"]);  // from the trailers
    EXPECT_EQ(COMPRESS_TYPE_GZIP, cntl.response_compress_type());
    EXPECT_GT(server.service.last_deadline_ms.load(), 9000);  // grpc-timeout: the 10 s budget
    EXPECT_LE(server.service.last_deadline_ms.load(), 10000);
  }
  const auto status_call = [&](int grpc_code) {
    Controller cntl;
    TestRequest request;
    request.set_message("x");
    request.set_fail_code(grpc_code);
    request.set_fail_text("why " + std::to_string(grpc_code));
    TestResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    EXPECT_NE(std::string::npos, cntl.ErrorText().find("why")) << cntl.ErrorText();
    return cntl.ErrorCode();
  };
  EXPECT_EQ(EPERM, status_call(7));         // PERMISSION_DENIED
  EXPECT_EQ(EINVAL, status_call(3));        // INVALID_ARGUMENT
  EXPECT_EQ(ERPCAUTH, status_call(16));     // UNAUTHENTICATED
  EXPECT_EQ(EINTERNAL, status_call(14));    // UNAVAILABLE, as brpc maps it
  EXPECT_EQ(ENOMETHOD, status_call(12));    // UNIMPLEMENTED
  {  // a method the server lacks
    Controller cntl;
    TestRequest request;
    request.set_message("x");
    TestResponse response;
    stub.Echo2(&cntl, &request, &response, nullptr);
    EXPECT_EQ(ENOMETHOD, cntl.ErrorCode()) << cntl.ErrorText();
  }
  {  // past the server's receive limit: RESOURCE_EXHAUSTED -> ELIMIT
    Controller cntl;
    TestRequest request;
    request.set_message(std::string(100u << 10, 'q'));
    TestResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    EXPECT_EQ(ELIMIT, cntl.ErrorCode()) << cntl.ErrorText();
  }
  {  // past the channel's max_body_size
    Controller cntl;
    TestRequest request;
    request.set_message("x");
    request.set_response_bytes(200u << 10);
    TestResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    EXPECT_EQ(ERESPONSE, cntl.ErrorCode()) << cntl.ErrorText();
  }
  Controller cntl;
  TestRequest request;
  request.set_message("after");
  TestResponse response;
  stub.Echo(&cntl, &request, &response, nullptr);
  EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
  EXPECT_EQ(1u, channel->stats().connections_opened);
}

TEST(GrpcChannelInterop, DeadlineAndCancellationReachTheServer) {
  GrpcServer server;
  auto channel = GrpcChannel(server.address());
  e2e::TestService_Stub stub(channel.get());
  {
    Controller cntl;
    cntl.set_timeout_ms(150);
    TestRequest request;
    request.set_message("slow");
    request.set_delay_ms(3000);
    TestResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    EXPECT_EQ(ERPCTIMEDOUT, cntl.ErrorCode()) << cntl.ErrorText();
    EXPECT_LE(server.service.last_deadline_ms.load(), 150);
  }
  {
    Controller cntl;
    TestRequest request;
    request.set_message("cancel");
    request.set_delay_ms(3000);
    TestResponse response;
    stub.Echo(&cntl, &request, &response, DoNothing());
    for (int i = 0; i < 1000 && server.service.calls.load() < 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    cntl.StartCancel();
    Join(cntl.call_id());
    EXPECT_EQ(ECANCELED, cntl.ErrorCode());
  }
  for (int i = 0; i < 1000 && server.service.canceled.load() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(2, server.service.canceled.load());  // the deadline's RST_STREAM and the cancel's
}

// The server allows 4 streams per connection: 200 calls from 8 threads queue for them on one.
TEST(GrpcChannelInterop, ManyConcurrentCallsOnOneConnection) {
  GrpcServer server(/*max_streams=*/4);
  auto channel = GrpcChannel(server.address());
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      e2e::TestService_Stub stub(channel.get());
      for (int i = 0; i < 25; ++i) {
        Controller cntl;
        TestRequest request;
        request.set_message(std::to_string(t) + "/" + std::to_string(i));
        request.set_delay_ms(i % 5 == 0 ? 5 : 0);
        TestResponse response;
        stub.Echo(&cntl, &request, &response, nullptr);
        if (cntl.Failed()) {
          ADD_FAILURE() << cntl.ErrorText();
        } else {
          ok += response.message() == request.message();
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(200, ok.load());
  EXPECT_EQ(1u, channel->stats().connections_opened);
}

TEST(GrpcChannelInterop, RoundRobinOverTwoGrpcServers) {
  GrpcServer a, b;
  auto channel = GrpcChannel("list://" + a.address() + "," + b.address(), {}, "rr");
  e2e::TestService_Stub stub(channel.get());
  for (int i = 0; i < 20; ++i) {
    Controller cntl;
    TestRequest request;
    request.set_message("rr");
    TestResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
  }
  EXPECT_EQ(10, a.service.calls.load());
  EXPECT_EQ(10, b.service.calls.load());
}

}  // namespace
}  // namespace arenarpc
