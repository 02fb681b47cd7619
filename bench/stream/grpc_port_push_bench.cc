// grpc_port_push_bench: a server stream of small messages read by the same gRPC C++ client from
// arenarpc's gRPC port (GrpcStreamService) or from gRPC C++'s own server (a sync server-streaming
// method, as grpc_stream_push_bench), the server and the client in two processes pinned to their
// own cores. Prints the server's CPU seconds for the stream and its messages per CPU second.
//
//   grpc_port_push_bench --server arenarpc|grpc [--mode heap] [--messages N] [--message_bytes B]
//                        [--server_cpu 1] [--client_cpu 0]

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "arenarpc/grpc_stream.h"
#include "arenarpc/server.h"
#include "grpc_port_push.pb.h"
#include "grpc_push.grpc.pb.h"
#include "push_bench_support.h"

namespace {

using streambench::CpuSeconds;

void Pin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
}


// The client: one stream through gRPC's sync API on `path`; the number of messages read.
long ReadStream(int port, const std::string& path, long messages, int message_bytes) {
  auto channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  streambench::PushRequest request;
  request.set_messages(messages);
  request.set_message_bytes(message_bytes);
  grpc::ClientContext context;
  const grpc::internal::RpcMethod method(path.c_str(), grpc::internal::RpcMethod::SERVER_STREAMING,
                                         channel);
  std::unique_ptr<grpc::ClientReader<streambench::PushMessage>> reader(
      grpc::internal::ClientReaderFactory<streambench::PushMessage>::Create(
          channel.get(), method, &context, request));
  streambench::PushMessage message;
  long got = 0;
  while (reader->Read(&message)) ++got;
  const grpc::Status status = reader->Finish();
  if (!status.ok()) std::fprintf(stderr, "stream: %s\n", status.error_message().c_str());
  return got;
}

}  // namespace

int main(int argc, char** argv) {
  std::string server_kind, mode = "heap";
  long messages = 1000000;
  int message_bytes = 16, server_cpu = 1, client_cpu = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--server") server_kind = argv[i + 1];
    else if (flag == "--mode") mode = argv[i + 1];
    else if (flag == "--messages") messages = std::atol(argv[i + 1]);
    else if (flag == "--message_bytes") message_bytes = std::atoi(argv[i + 1]);
    else if (flag == "--server_cpu") server_cpu = std::atoi(argv[i + 1]);
    else if (flag == "--client_cpu") client_cpu = std::atoi(argv[i + 1]);
  }
  if (argc % 2 == 0 || messages <= 0 || (server_kind != "arenarpc" && server_kind != "grpc")) {
    std::fprintf(stderr, "usage: grpc_port_push_bench --server arenarpc|grpc [--mode M] "
                         "[--messages N] [--message_bytes B] [--server_cpu C] [--client_cpu C]\n");
    return 2;
  }
  // The client is forked before either side starts threads; it waits for the port on a pipe.
  int to_client[2], to_server[2];
  if (pipe(to_client) != 0 || pipe(to_server) != 0) return 1;
  const pid_t child = fork();
  if (child == 0) {
    Pin(client_cpu);
    int port = 0;
    if (read(to_client[0], &port, sizeof(port)) != sizeof(port)) _exit(1);
    const std::string path =
        server_kind == "grpc" ? "/streambench.Push/Push" : "/streambench.ArenaPush/Push";
    ReadStream(port, path, 10000, message_bytes);  // warm-up (connection, allocator, strategy)
    char go = 1;
    if (write(to_server[1], &go, 1) != 1) _exit(1);
    if (read(to_client[0], &go, 1) != 1) _exit(1);
    const auto t0 = std::chrono::steady_clock::now();
    const long got = ReadStream(port, path, messages, message_bytes);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("client: messages=%ld wall_s=%.3f messages_per_s=%.0f client_cpu_s=%.3f\n", got,
                wall, static_cast<double>(got) / wall, CpuSeconds());
    std::fflush(stdout);
    _exit(got == messages ? 0 : 1);
  }
  Pin(server_cpu);
  int port = 0;
  std::unique_ptr<grpc::Server> grpc_server;
  streambench::GrpcPushService grpc_service;
  arenarpc::Server arena_server;
  arenarpc::GrpcStreamService arena_service(streambench::ArenaPush::descriptor());
  if (server_kind == "grpc") {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&grpc_service);
    grpc_server = builder.BuildAndStart();
  } else {
    arena_service.AddMethod("Push", [](arenarpc::GrpcServerStream& stream) {
      arenarpc::GrpcStreamMessages in;
      if (!stream.Read(&in)) return;
      const auto& request = in.request<streambench::PushRequest>();
      const std::string data(static_cast<size_t>(request.message_bytes()), 'x');
      for (int64_t i = 0; i < request.messages(); ++i) {
        arenarpc::GrpcStreamMessages out = stream.NewMessages();
        out.response<streambench::PushMessage>().set_data(data);
        if (!stream.Write(std::move(out))) return;
      }
    });
    arena_server.AddService(&arena_service, arenarpc::SERVER_DOESNT_OWN_SERVICE);
    arenarpc::ServerOptions options;
    options.memory_mode = mode;
    options.num_threads = 1;
    if (arena_server.Start("127.0.0.1:0", options) == 0) port = arena_server.listen_port();
  }
  if (port <= 0) {
    std::fprintf(stderr, "server did not start\n");
    return 1;
  }
  if (write(to_client[1], &port, sizeof(port)) != sizeof(port)) return 1;
  char go = 0;
  if (read(to_server[0], &go, 1) != 1) return 1;  // warm-up done
  const double cpu0 = CpuSeconds();
  if (write(to_client[1], &go, 1) != 1) return 1;
  int status = 0;
  waitpid(child, &status, 0);
  const double cpu = CpuSeconds() - cpu0;
  std::printf("server=%s mode=%s messages=%ld message_bytes=%d server_cpu_s=%.3f "
              "messages_per_server_cpu_s=%.0f\n",
              server_kind.c_str(), server_kind == "grpc" ? "default" : mode.c_str(), messages,
              message_bytes, cpu, static_cast<double>(messages) / cpu);
  if (grpc_server) grpc_server->Shutdown();
  arena_server.Stop();
  arena_server.Join();
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
