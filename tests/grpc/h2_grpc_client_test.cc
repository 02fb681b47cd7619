// Debian's gRPC C++ 1.51 client calling the arenarpc port (gRPC over HTTP/2) with the workload's
// generated messages: the echo service of the benchmark in every memory strategy, many calls at
// once on one channel, deadlines, and Stop() with a call in flight (GOAWAY: the call completes,
// later calls are refused); streaming methods (GrpcStreamService): bidirectional, server and
// client streams, 16 streams at once on one channel; a ServerInterceptor refusing a stream.
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/impl/codegen/rpc_method.h>
#include <grpcpp/impl/codegen/sync_stream.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/grpc_stream.h"
#include "arenarpc/interceptor.h"
#include "arenarpc/server.h"
#include "grpc_stream_test.pb.h"
#include "e2e_test.pb.h"
#include "echo/echo_service.h"
#include "echo/payload_generator.h"
#include "test_service.h"

namespace arenarpc {
namespace {

using std::chrono::system_clock;

template <typename Request, typename Response>
grpc::Status Call(grpc::Channel* channel, const char* path, const Request& request,
                  Response* response, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const grpc::internal::RpcMethod method(path, grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::ClientContext context;
  context.set_deadline(system_clock::now() + timeout);
  return grpc::internal::BlockingUnaryCall<Request, Response>(channel, method, &context, request,
                                                              response);
}

std::shared_ptr<grpc::Channel> ChannelTo(const Server& server) {
  return grpc::CreateChannel("127.0.0.1:" + std::to_string(server.listen_port()),
                             grpc::InsecureChannelCredentials());
}

// `service` on 127.0.0.1:<any>, two threads, memory strategy `mode`.
void Start(Server& server, google::protobuf::Service* service, const char* mode) {
  ASSERT_EQ(0, server.AddService(service, SERVER_DOESNT_OWN_SERVICE));
  ServerOptions options;
  options.num_threads = 2;
  options.memory_mode = mode;
  ASSERT_EQ(0, server.Start("127.0.0.1:0", options)) << server.last_error();
}

class H2GrpcClientTest : public ::testing::TestWithParam<const char*> {};
INSTANTIATE_TEST_SUITE_P(Modes, H2GrpcClientTest,
                         ::testing::Values("heap", "arena", "paged", "reuse"));

TEST_P(H2GrpcClientTest, EchoWorkloadConcurrentlyOnOneChannel) {
  example::EchoServiceImpl service;
  Server server;
  ASSERT_NO_FATAL_FAILURE(Start(server, &service, GetParam()));
  auto channel = ChannelTo(server);
  constexpr int kThreads = 8, kCalls = 20;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      example::PayloadGenerator generator(10, 1000 + t);
      for (int i = 0; i < kCalls; ++i) {
        example::EchoRequest request;
        generator.Fill(&request);
        request.add_message("call " + std::to_string(i));
        example::EchoResponse response;
        const grpc::Status status =
            Call(channel.get(), "/arenarpc.example.EchoService/Echo", request, &response);
        if (!status.ok()) {
          ADD_FAILURE() << status.error_code() << " " << status.error_message();
          continue;
        }
        // The echo copies the payload; the message field stays empty.
        ok += response.payload().SerializeAsString() == request.payload().SerializeAsString();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(kThreads * kCalls, ok.load());
  const ServerStats stats = server.GetServerStats();
  EXPECT_EQ(0u, stats.malformed_frames);
}

TEST(H2GrpcClient, DeadlineAndUnknownMethod) {
  e2e::TestServiceImpl service;
  Server server;
  ASSERT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE));
  ServerOptions options;
  options.num_threads = 2;
  ASSERT_EQ(0, server.Start("127.0.0.1:0", options));
  auto channel = ChannelTo(server);
  e2e::TestRequest request;
  request.set_message("slow");
  request.set_delay_ms(600);
  e2e::TestResponse response;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(grpc::StatusCode::DEADLINE_EXCEEDED,
            Call(channel.get(), "/arenarpc.e2e.TestService/Echo", request, &response,
                 std::chrono::milliseconds(200))
                .error_code());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
  EXPECT_EQ(grpc::StatusCode::UNIMPLEMENTED,
            Call(channel.get(), "/arenarpc.e2e.TestService/Nope", request, &response).error_code());
  server.Stop();
  server.Join();
}

// Stop() sends GOAWAY: the call in flight completes with its reply; the server then refuses.
TEST(H2GrpcClient, StopIsLosslessForCallsInFlight) {
  e2e::TestServiceImpl service;
  Server server;
  ASSERT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE));
  ServerOptions options;
  options.num_threads = 2;
  ASSERT_EQ(0, server.Start("127.0.0.1:0", options));
  auto channel = ChannelTo(server);
  e2e::TestRequest warm;
  warm.set_message("warm");
  e2e::TestResponse warm_response;
  ASSERT_TRUE(Call(channel.get(), "/arenarpc.e2e.TestService/Echo", warm, &warm_response).ok());

  grpc::Status in_flight;
  e2e::TestResponse response;
  std::thread caller([&] {
    e2e::TestRequest request;
    request.set_message("in flight");
    request.set_delay_ms(400);
    in_flight = Call(channel.get(), "/arenarpc.e2e.TestService/Echo", request, &response);
  });
  // The handler runs (the warm call was the first): its stream was taken before the GOAWAY.
  for (int i = 0; i < 2000 && service.handler_calls() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(2, service.handler_calls());
  server.Stop();
  caller.join();
  EXPECT_TRUE(in_flight.ok()) << in_flight.error_code() << " " << in_flight.error_message();
  EXPECT_EQ("in flight", response.message());
  EXPECT_EQ(grpc::StatusCode::UNAVAILABLE,
            Call(channel.get(), "/arenarpc.e2e.TestService/Echo", warm, &warm_response,
                 std::chrono::milliseconds(2000))
                .error_code());
  server.Join();
}

using e2e::StreamReply;
using e2e::StreamRequest;

TEST_P(H2GrpcClientTest, StreamingMethodsFromTheCppClient) {
  GrpcStreamService streams(e2e::StreamService::descriptor());
  ASSERT_EQ(0, streams.AddMethod("Bidi", [](GrpcServerStream& stream) {
    GrpcStreamMessages m;
    for (int i = 0; stream.Read(&m); ++i) {
      m.response<StreamReply>().set_text(m.request<StreamRequest>().text());
      m.response<StreamReply>().set_index(i);
      if (!stream.Write(std::move(m))) return;
    }
  }));
  ASSERT_EQ(0, streams.AddMethod("ServerStream", [](GrpcServerStream& stream) {
    GrpcStreamMessages in;
    if (!stream.Read(&in)) return;
    for (int i = 0; i < in.request<StreamRequest>().count(); ++i) {
      GrpcStreamMessages out = stream.NewMessages();
      out.response<StreamReply>().set_index(i);
      out.response<StreamReply>().set_payload(std::string(in.request<StreamRequest>().bytes(), 'p'));
      if (!stream.Write(std::move(out))) return;
    }
  }));
  ASSERT_EQ(0, streams.AddMethod("ClientStream", [](GrpcServerStream& stream) {
    GrpcStreamMessages in;
    int count = 0;
    while (stream.Read(&in)) ++count;
    GrpcStreamMessages out = stream.NewMessages();
    out.response<StreamReply>().set_index(count);
    stream.Write(std::move(out));
  }));
  Server server;
  ASSERT_NO_FATAL_FAILURE(Start(server, &streams, GetParam()));
  auto channel = ChannelTo(server);

  auto bidi = [&](int messages, const std::string& tag) {
    const grpc::internal::RpcMethod method("/arenarpc.e2e.StreamService/Bidi",
                                           grpc::internal::RpcMethod::BIDI_STREAMING);
    grpc::ClientContext context;
    context.set_deadline(system_clock::now() + std::chrono::seconds(20));
    std::unique_ptr<grpc::ClientReaderWriter<StreamRequest, StreamReply>> call(
        grpc::internal::ClientReaderWriterFactory<StreamRequest, StreamReply>::Create(
            channel.get(), method, &context));
    int good = 0;
    for (int i = 0; i < messages; ++i) {
      StreamRequest request;
      request.set_text(tag + std::to_string(i));
      StreamReply reply;
      if (call->Write(request) && call->Read(&reply) && reply.index() == i &&
          reply.text() == request.text()) {
        ++good;
      }
    }
    call->WritesDone();
    StreamReply extra;
    EXPECT_FALSE(call->Read(&extra));
    const grpc::Status status = call->Finish();
    EXPECT_TRUE(status.ok()) << status.error_message();
    return good;
  };
  EXPECT_EQ(100, bidi(100, "b"));

  {  // server stream of 1000 replies of 100 bytes
    const grpc::internal::RpcMethod method("/arenarpc.e2e.StreamService/ServerStream",
                                           grpc::internal::RpcMethod::SERVER_STREAMING);
    grpc::ClientContext context;
    StreamRequest request;
    request.set_count(1000);
    request.set_bytes(100);
    std::unique_ptr<grpc::ClientReader<StreamReply>> call(
        grpc::internal::ClientReaderFactory<StreamReply>::Create(channel.get(), method, &context,
                                                                 request));
    StreamReply reply;
    int got = 0;
    while (call->Read(&reply)) got += reply.index() == got && reply.payload().size() == 100;
    EXPECT_EQ(1000, got);
    EXPECT_TRUE(call->Finish().ok());
  }
  {  // client stream of 50 messages
    const grpc::internal::RpcMethod method("/arenarpc.e2e.StreamService/ClientStream",
                                           grpc::internal::RpcMethod::CLIENT_STREAMING);
    grpc::ClientContext context;
    StreamReply reply;
    std::unique_ptr<grpc::ClientWriter<StreamRequest>> call(
        grpc::internal::ClientWriterFactory<StreamRequest>::Create(channel.get(), method,
                                                                   &context, &reply));
    StreamRequest request;
    for (int i = 0; i < 50; ++i) EXPECT_TRUE(call->Write(request));
    call->WritesDone();
    EXPECT_TRUE(call->Finish().ok());
    EXPECT_EQ(50, reply.index());
  }
  std::atomic<int> good{0};  // 16 bidirectional streams at once on the one channel
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] { good += bidi(30, "t" + std::to_string(t) + "-"); });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(16 * 30, good.load());
  server.Stop();
  server.Join();
  for (const char* name : {"arenarpc.e2e.StreamService.Bidi",
                           "arenarpc.e2e.StreamService.ServerStream",
                           "arenarpc.e2e.StreamService.ClientStream"}) {
    const MethodStats stats = server.GetMethodStats(name);
    EXPECT_GT(stats.memory.acquired, 0u) << name;
    EXPECT_EQ(stats.memory.acquired, stats.memory.released) << name;
  }
}

// Streaming calls pass the server's interceptors before their handler: a refused one never runs.
TEST(H2GrpcClient, InterceptorsSeeAndMayRefuseStreamingCalls) {
  class RefuseServerStream final : public ServerInterceptor {
   public:
    int Intercept(const InterceptedServerCall& call, std::string* error_text) const override {
      seen.push_back(call.method.name());
      if (call.method.name() != "ServerStream") return 0;
      *error_text = "no server streams for you";
      return EPERM;
    }
    mutable std::vector<std::string> seen;  // one stream at a time below
  } interceptor;
  std::atomic<int> handled{0};
  GrpcStreamService streams(e2e::StreamService::descriptor());
  for (const char* name : {"Bidi", "ServerStream"}) {
    ASSERT_EQ(0, streams.AddMethod(name, [&](GrpcServerStream& stream) {
      ++handled;
      GrpcStreamMessages m;
      while (stream.Read(&m)) {
        m.response<StreamReply>().set_text(m.request<StreamRequest>().text());
        if (!stream.Write(std::move(m))) return;
      }
    }));
  }
  Server server;
  ASSERT_EQ(0, server.AddService(&streams, SERVER_DOESNT_OWN_SERVICE));
  ServerOptions options;
  options.interceptors = {std::shared_ptr<const ServerInterceptor>(&interceptor, [](auto*) {})};
  ASSERT_EQ(0, server.Start("127.0.0.1:0", options)) << server.last_error();
  auto channel = ChannelTo(server);
  {
    const grpc::internal::RpcMethod method("/arenarpc.e2e.StreamService/ServerStream",
                                           grpc::internal::RpcMethod::SERVER_STREAMING);
    grpc::ClientContext context;
    context.set_deadline(system_clock::now() + std::chrono::seconds(10));
    std::unique_ptr<grpc::ClientReader<StreamReply>> call(
        grpc::internal::ClientReaderFactory<StreamReply>::Create(channel.get(), method, &context,
                                                                 StreamRequest()));
    StreamReply reply;
    EXPECT_FALSE(call->Read(&reply));
    const grpc::Status status = call->Finish();
    EXPECT_EQ(grpc::StatusCode::PERMISSION_DENIED, status.error_code());
    EXPECT_EQ("no server streams for you", status.error_message());
  }
  {
    const grpc::internal::RpcMethod method("/arenarpc.e2e.StreamService/Bidi",
                                           grpc::internal::RpcMethod::BIDI_STREAMING);
    grpc::ClientContext context;
    context.set_deadline(system_clock::now() + std::chrono::seconds(10));
    std::unique_ptr<grpc::ClientReaderWriter<StreamRequest, StreamReply>> call(
        grpc::internal::ClientReaderWriterFactory<StreamRequest, StreamReply>::Create(
            channel.get(), method, &context));
    StreamRequest request;
    request.set_text("passes");
    StreamReply reply;
    EXPECT_TRUE(call->Write(request));
    EXPECT_TRUE(call->Read(&reply));
    EXPECT_EQ("passes", reply.text());
    call->WritesDone();
    EXPECT_TRUE(call->Finish().ok());
  }
  EXPECT_EQ(1, handled.load());  // the refused stream's handler never ran
  EXPECT_EQ((std::vector<std::string>{"ServerStream", "Bidi"}), interceptor.seen);
  server.Stop();
  server.Join();
  EXPECT_EQ(1u, server.GetMethodStats("arenarpc.e2e.StreamService.ServerStream").errors);
}

}  // namespace
}  // namespace arenarpc
