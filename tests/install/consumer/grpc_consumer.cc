// Installed arenarpc::grpc: a gRPC callback service whose request/response come from the paged
// strategy, called once over loopback. Exit status 0 only if the reply is the expected one and
// the allocator handed out and took back the call's messages.
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <memory>
#include <string>

#include "arenarpc/grpc_memory/message_allocator.h"
#include "proto/hello_grpc.grpc.pb.h"

namespace {

class Hello final : public consumer::HelloGrpc::CallbackService {
 public:
  grpc::ServerUnaryReactor* Say(grpc::CallbackServerContext* context,
                                const consumer::HelloRequest* request,
                                consumer::HelloReply* reply) override {
    reply->set_text("hello " + request->name());
    arenarpc::grpc_memory::SettleResponse(context);
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

int Fail(const std::string& what) {
  std::fprintf(stderr, "grpc_consumer: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main() {
  Hello service;
  std::string error;
  auto allocator = arenarpc::grpc_memory::allocator<consumer::HelloRequest, consumer::HelloReply>(
      "paged", {}, &error);
  if (!allocator) return Fail("no allocator: " + error);
  service.SetMessageAllocatorFor_Say(allocator.get());

  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) return Fail("gRPC server did not start");

  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                     grpc::InsecureChannelCredentials());
  auto stub = consumer::HelloGrpc::NewStub(channel);
  consumer::HelloRequest request;
  request.set_name("grpc");
  consumer::HelloReply reply;
  grpc::ClientContext context;
  grpc::Status status = stub->Say(&context, request, &reply);
  server->Shutdown();
  server->Wait();
  if (!status.ok()) return Fail("call failed: " + status.error_message());
  if (reply.text() != "hello grpc") return Fail("unexpected reply: " + reply.ShortDebugString());
  auto stats = allocator->holder_stats();
  if (stats.allocated != 1 || stats.released != 1) {
    return Fail("allocator: " + std::to_string(stats.allocated) + " allocated, " +
                std::to_string(stats.released) + " released (want 1, 1)");
  }
  std::printf("grpc_consumer: 1 gRPC call through arenarpc::grpc (%s) ok\n",
              std::string(allocator->memory().name()).c_str());
  return 0;
}
