// grpc_stream_push_bench: stream_push_bench's measurement on gRPC C++ (Debian's 1.51): one process
// with a gRPC server whose server-streaming handler writes --messages messages of --message_bytes
// bytes, and a client reading them on loopback. Prints wall time, messages/s and the process's
// CPU seconds.
//
//   build/release/bench/stream/grpc_stream_push_bench --messages 1000000 --message_bytes 16

#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "grpc_push.grpc.pb.h"
#include "push_bench_support.h"

namespace {

using streambench::CpuSeconds;


}  // namespace

int main(int argc, char** argv) {
  long messages = 1000000;
  int message_bytes = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--messages") == 0) messages = std::atol(argv[i + 1]);
    if (std::strcmp(argv[i], "--message_bytes") == 0) message_bytes = std::atoi(argv[i + 1]);
  }
  if (argc % 2 == 0 || messages <= 0) {
    std::fprintf(stderr, "usage: grpc_stream_push_bench [--messages N] [--message_bytes B]\n");
    return 2;
  }
  streambench::GrpcPushService service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) return 1;
  auto channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  auto stub = streambench::Push::NewStub(channel);
  streambench::PushRequest request;
  request.set_messages(messages);
  request.set_message_bytes(message_bytes);
  grpc::ClientContext context;
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  auto reader = stub->Push(&context, request);
  streambench::PushMessage message;
  long got = 0;
  while (reader->Read(&message)) ++got;
  const grpc::Status status = reader->Finish();
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = CpuSeconds() - cpu0;
  std::printf("messages=%ld message_bytes=%d wall_s=%.3f messages_per_s=%.0f cpu_s=%.3f "
              "messages_per_cpu_s=%.0f\n",
              got, message_bytes, wall, static_cast<double>(got) / wall, cpu,
              static_cast<double>(got) / cpu);
  server->Shutdown();
  return status.ok() && got == messages ? 0 : 1;
}
