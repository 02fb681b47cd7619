// arenarpc::Channel with protocol "grpc" calling Debian's gRPC C++ 1.51 server: unary calls,
// metadata both ways, gzip both ways, gRPC statuses mapped back to brpc codes, grpc-timeout and
// deadline, cancellation seen by the server, a request past the server's limit, a response past
// the channel's, many concurrent calls on one connection under the server's
// MAX_CONCURRENT_STREAMS, an rr cluster of two gRPC servers; and GrpcClientStream against a
// handwritten sync streaming service: bidi echo with metadata, a server stream with an error
// status after its messages, a client stream, a cancel seen by the server.
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/method_handler.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/impl/codegen/rpc_service_method.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/callback.h"
#include "arenarpc/channel.h"
#include "arenarpc/error_codes.h"
#include "arenarpc/grpc_client_stream.h"
#include "e2e_test.pb.h"
#include "grpc_stream_test.pb.h"

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
  explicit GrpcServer(int max_streams = 0,
                      std::shared_ptr<grpc::ServerCredentials> credentials =
                          grpc::InsecureServerCredentials()) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", credentials, &port);
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

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// gRPC's secure server takes HTTP/2 only when ALPN agreed on h2: the Channel offers it.
TEST(GrpcChannelInterop, TlsToGrpcsSecureServer) {
  char pattern[] = "/tmp/arenarpc-pki-XXXXXX";
  ASSERT_NE(nullptr, mkdtemp(pattern));
  const std::string dir = pattern;
  ASSERT_EQ(0, std::system(("bash " ARENARPC_TEST_PKI_SCRIPT " " + dir + " >/dev/null").c_str()));
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({ReadFile(dir + "/server.key"), ReadFile(dir + "/server.pem")});
  {
    GrpcServer server(0, grpc::SslServerCredentials(ssl));
    ASSERT_GT(server.port, 0);
    ChannelOptions options;
    options.tls.enable = true;
    options.tls.ca_file = dir + "/ca.pem";
    auto channel = GrpcChannel("localhost:" + std::to_string(server.port), options);
    e2e::TestService_Stub stub(channel.get());
    Controller cntl;
    TestRequest request;
    request.set_message("secure");
    TestResponse response;
    stub.Echo(&cntl, &request, &response, nullptr);
    EXPECT_FALSE(cntl.Failed()) << cntl.ErrorText();
    EXPECT_EQ("secure", response.message());
    EXPECT_EQ(1, server.service.calls.load());
  }
  std::filesystem::remove_all(dir);
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

// StreamService's streaming rpcs on gRPC's own sync server, written by hand (no grpc plugin).
class GrpcStreamingService : public grpc::Service {
 public:
  using Self = GrpcStreamingService;
  using e2eReq = e2e::StreamRequest;
  using e2eRep = e2e::StreamReply;
  GrpcStreamingService() {
    AddMethod(new grpc::internal::RpcServiceMethod(
        "/arenarpc.e2e.StreamService/Bidi", grpc::internal::RpcMethod::BIDI_STREAMING,
        new grpc::internal::BidiStreamingHandler<Self, e2eReq, e2eRep>(
            [](Self*, grpc::ServerContext* context,
               grpc::ServerReaderWriter<e2eRep, e2eReq>* stream) {
              for (const auto& [key, value] : context->client_metadata()) {
                if (std::string(key.data(), key.size()) == "x-user") {
                  context->AddInitialMetadata("x-stream", std::string(value.data(), value.size()) + "-back");
                }
              }
              context->AddTrailingMetadata("x-trailer", "t");
              e2eReq request;
              for (int i = 0; stream->Read(&request); ++i) {
                e2eRep reply;
                reply.set_text(request.text());
                reply.set_index(i);
                if (!stream->Write(reply)) break;
              }
              return grpc::Status::OK;
            },
            this)));
    AddMethod(new grpc::internal::RpcServiceMethod(
        "/arenarpc.e2e.StreamService/ServerStream", grpc::internal::RpcMethod::SERVER_STREAMING,
        new grpc::internal::ServerStreamingHandler<Self, e2eReq, e2eRep>(
            [this](Self*, grpc::ServerContext* context, const e2eReq* request,
                   grpc::ServerWriter<e2eRep>* writer) {
              for (int i = 0; request->count() < 0 || i < request->count(); ++i) {
                if (context->IsCancelled()) {
                  ++canceled;
                  return grpc::Status::CANCELLED;
                }
                e2eRep reply;
                reply.set_index(i);
                if (!writer->Write(reply)) {
                  if (context->IsCancelled()) ++canceled;
                  return grpc::Status::CANCELLED;
                }
                if (request->delay_ms() > 0) {
                  std::this_thread::sleep_for(std::chrono::milliseconds(request->delay_ms()));
                }
              }
              if (request->fail_code() != 0) {
                return grpc::Status(static_cast<grpc::StatusCode>(request->fail_code()), request->text());
              }
              return grpc::Status::OK;
            },
            this)));
    AddMethod(new grpc::internal::RpcServiceMethod(
        "/arenarpc.e2e.StreamService/ClientStream", grpc::internal::RpcMethod::CLIENT_STREAMING,
        new grpc::internal::ClientStreamingHandler<Self, e2eReq, e2eRep>(
            [](Self*, grpc::ServerContext*, grpc::ServerReader<e2eReq>* reader, e2eRep* reply) {
              e2eReq request;
              int count = 0;
              int64_t sum = 0;
              while (reader->Read(&request)) ++count, sum += request.count();
              reply->set_index(count);
              reply->set_text(std::to_string(sum));
              return grpc::Status::OK;
            },
            this)));
  }
  std::atomic<int> canceled{0};
};

const google::protobuf::MethodDescriptor* StreamMethod(const char* name) {
  return e2e::StreamService::descriptor()->FindMethodByName(name);
}

TEST(GrpcChannelInterop, ClientStreamsAgainstGrpcsOwnServer) {
  GrpcStreamingService service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(0, port);
  auto channel = GrpcChannel("127.0.0.1:" + std::to_string(port));
  {  // bidi echo, metadata both ways
    Controller cntl;
    cntl.request_user_fields()["x-user"] = "bob";
    GrpcClientStream stream;
    ASSERT_EQ(0, stream.Open(*channel, StreamMethod("Bidi"), &cntl));
    for (int i = 0; i < 10; ++i) {
      e2e::StreamRequest request;
      request.set_text("b" + std::to_string(i));
      ASSERT_TRUE(stream.Write(request));
      e2e::StreamReply reply;
      ASSERT_TRUE(stream.Read(&reply));
      EXPECT_EQ("b" + std::to_string(i), reply.text());
      EXPECT_EQ(i, reply.index());
    }
    ASSERT_TRUE(stream.WritesDone());
    e2e::StreamReply reply;
    EXPECT_FALSE(stream.Read(&reply));
    EXPECT_EQ(0, stream.Finish()) << cntl.ErrorText();
    EXPECT_EQ("bob-back", cntl.response_user_fields()["x-stream"]);
    EXPECT_EQ("t", cntl.response_user_fields()["x-trailer"]);
  }
  {  // a server stream of 500, then PERMISSION_DENIED
    Controller cntl;
    GrpcClientStream stream;
    ASSERT_EQ(0, stream.Open(*channel, StreamMethod("ServerStream"), &cntl));
    e2e::StreamRequest request;
    request.set_count(500);
    request.set_fail_code(grpc::StatusCode::PERMISSION_DENIED);
    request.set_text("denied");
    ASSERT_TRUE(stream.Write(request));
    ASSERT_TRUE(stream.WritesDone());
    e2e::StreamReply reply;
    int n = 0;
    while (stream.Read(&reply)) ASSERT_EQ(n++, reply.index());
    EXPECT_EQ(500, n);
    EXPECT_EQ(EPERM, stream.Finish());
    EXPECT_NE(std::string::npos, cntl.ErrorText().find("denied")) << cntl.ErrorText();
  }
  {  // the server ends a server stream before the client half-closes: WritesDone is still true
    Controller cntl;
    GrpcClientStream stream;
    ASSERT_EQ(0, stream.Open(*channel, StreamMethod("ServerStream"), &cntl));
    e2e::StreamRequest request;
    request.set_count(3);
    ASSERT_TRUE(stream.Write(request));
    e2e::StreamReply reply;
    int n = 0;
    while (stream.Read(&reply)) ++n;  // false once the server's trailers came
    EXPECT_EQ(3, n);
    EXPECT_FALSE(stream.Write(request));  // nothing more can reach the server
    EXPECT_TRUE(stream.WritesDone());
    EXPECT_FALSE(stream.WritesDone());
    EXPECT_EQ(0, stream.Finish()) << cntl.ErrorText();
  }
  {  // a canceled stream: WritesDone is false
    Controller cntl;
    GrpcClientStream stream;
    ASSERT_EQ(0, stream.Open(*channel, StreamMethod("Bidi"), &cntl));
    stream.StartCancel();
    EXPECT_FALSE(stream.WritesDone());
    EXPECT_EQ(ECANCELED, stream.Finish());
  }
  {  // a client stream of 50
    Controller cntl;
    GrpcClientStream stream;
    ASSERT_EQ(0, stream.Open(*channel, StreamMethod("ClientStream"), &cntl));
    for (int i = 1; i <= 50; ++i) {
      e2e::StreamRequest request;
      request.set_count(i);
      ASSERT_TRUE(stream.Write(request));
    }
    ASSERT_TRUE(stream.WritesDone());
    e2e::StreamReply reply;
    ASSERT_TRUE(stream.Read(&reply));
    EXPECT_EQ(50, reply.index());
    EXPECT_EQ(std::to_string(50 * 51 / 2), reply.text());
    EXPECT_EQ(0, stream.Finish()) << cntl.ErrorText();
  }
  {  // a cancel mid-stream reaches the server
    Controller cntl;
    GrpcClientStream stream;
    ASSERT_EQ(0, stream.Open(*channel, StreamMethod("ServerStream"), &cntl));
    e2e::StreamRequest request;
    request.set_count(-1);
    request.set_delay_ms(1);
    ASSERT_TRUE(stream.Write(request));
    e2e::StreamReply reply;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(stream.Read(&reply));
    stream.StartCancel();
    EXPECT_EQ(ECANCELED, stream.Finish());
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (service.canceled.load() == 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(1, service.canceled.load());
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

}  // namespace
}  // namespace arenarpc
