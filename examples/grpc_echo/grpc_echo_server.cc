// grpc_echo_server: the workload's echo service on gRPC's callback API, with its request/response
// memory chosen by --mode (gRPC's default allocation or one of arenarpc's strategies).
//
//   grpc_echo_server --address=127.0.0.1:50051 --mode=reuse
//   -> "grpc_echo_server listening on 127.0.0.1:50051 mode=reuse pid=1234"
// SIGINT/SIGTERM shut it down gracefully and print the strategy's counters to stderr.

#include <gflags/gflags.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "arenarpc/grpc_memory/release_at_serialize.h"
#include "arenarpc/grpc_memory/service_memory.h"
#include "grpc_echo/echo_service.h"

DEFINE_string(address, "127.0.0.1:50051", "ip:port to listen on (port 0 picks a free port)");
DEFINE_string(mode, "default",
              "message memory: default (gRPC's own allocation) | heap | arena | paged | reuse");
DEFINE_string(request_parse, "merge",
              "merge: requests are merged into the strategy's empty message (keeps the reuse "
              "strategy's tree); grpc: gRPC's generated allocator setter and its ParseFrom path");
DEFINE_bool(release_at_serialize, false,
            "return each call's messages to the strategy when gRPC has serialized the reply "
            "instead of when it releases the holder (arenarpc/grpc_memory/release_at_serialize.h; the "
            "echo handler touches nothing after Finish)");
DEFINE_uint64(page_size, arenarpc::memory::MemoryOptions{}.page_size,
              "paged/reuse: bytes per page (power of two, 256 B..1 MiB)");
DEFINE_uint64(page_cache_capacity, arenarpc::memory::MemoryOptions{}.page_cache_capacity,
              "paged/reuse: free pages kept in the page cache");
DEFINE_uint64(thread_cache_pages, arenarpc::memory::MemoryOptions{}.thread_cache_pages,
              "paged/reuse: free pages a thread keeps locally");
DEFINE_uint64(reuse_max_pooled, arenarpc::memory::ReuseSettings{}.max_pooled_objects,
              "reuse: max pooled objects per message type");
DEFINE_uint64(reuse_max_object_bytes, arenarpc::memory::ReuseSettings{}.max_object_bytes,
              "reuse: objects retaining more are cut back, destroyed if still over");
DEFINE_uint64(reuse_max_pool_bytes, arenarpc::memory::ReuseSettings{}.max_pool_bytes,
              "reuse: max estimated retained bytes per type");
DEFINE_bool(reuse_keep_response_submessages, false,
            "reuse: keep responses' proto3 singular sub-messages attached between calls (faster; "
            "an empty one the handler touches is then not sent: docs/memory.md)");
DEFINE_uint64(reuse_min_call_bytes, arenarpc::memory::ReuseSettings{}.min_call_bytes,
              "reuse: a method whose mean request + response wire size is below this has its "
              "messages made on a paged arena (0: always pooled)");
DEFINE_bool(reuse_request_arenas, arenarpc::memory::ReuseSettings{}.request_arenas,
            "reuse: make each pooled request on an arena of its own where its type allows "
            "(docs/memory.md)");
DEFINE_bool(reuse_response_arenas, arenarpc::memory::ReuseSettings{}.response_arenas,
            "reuse: make each pooled response on an arena of its own where its type allows "
            "(docs/memory.md)");
DEFINE_uint64(arena_start_block_size, 256, "arena: first block size in bytes");
DEFINE_uint64(arena_max_block_size, 8192, "arena: max block size in bytes");
DEFINE_int32(threads, 0,
             "accepted for compatibility with echo_server's flags (>= 0); gRPC's callback server "
             "runs handlers on gRPC's own threads, which this cannot size: pin with taskset");

namespace {

arenarpc::memory::MemoryOptions OptionsFromFlags() {
  arenarpc::memory::MemoryOptions options;
  options.arena.start_block_size = FLAGS_arena_start_block_size;
  options.arena.max_block_size = FLAGS_arena_max_block_size;
  options.reuse.max_pooled_objects = FLAGS_reuse_max_pooled;
  options.reuse.max_object_bytes = FLAGS_reuse_max_object_bytes;
  options.reuse.max_pool_bytes = FLAGS_reuse_max_pool_bytes;
  options.reuse.keep_response_submessages = FLAGS_reuse_keep_response_submessages;
  options.reuse.min_call_bytes = FLAGS_reuse_min_call_bytes;
  options.reuse.request_arenas = FLAGS_reuse_request_arenas;
  options.reuse.response_arenas = FLAGS_reuse_response_arenas;
  options.page_size = FLAGS_page_size;
  options.page_cache_capacity = FLAGS_page_cache_capacity;
  options.thread_cache_pages = FLAGS_thread_cache_pages;
  return options;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "grpc_echo_server: %s\n", message.c_str());
  return 2;
}

// Blocks SIGINT/SIGTERM in every thread (call before gRPC starts any) and waits for one.
class ShutdownSignal {
 public:
  ShutdownSignal() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  }
  int Wait() const {
    int signal = 0;
    sigwait(&set_, &signal);
    return signal;
  }

 private:
  sigset_t set_;
};

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("gRPC echo server of the arenarpc workload (see docs/grpc.md)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc > 1) return Fail(std::string("unexpected argument '") + argv[1] + "'");
  if (FLAGS_threads < 0) return Fail("--threads must be >= 0");
  if (FLAGS_request_parse != "merge" && FLAGS_request_parse != "grpc") {
    return Fail("--request_parse must be merge or grpc, got '" + FLAGS_request_parse + "'");
  }

  std::string mode_error;
  if (!arenarpc::grpc_memory::ServiceMemory::IsValidMode(FLAGS_mode, &mode_error)) {
    return Fail("--mode: " + mode_error);
  }
  arenarpc::example::GrpcEchoServiceImpl service;
  // Configuration errors (options, bindings) come back as -1 / nullptr with a message.
  std::string error;
  std::unique_ptr<arenarpc::grpc_memory::ServiceMemory> memory =
      arenarpc::grpc_memory::ServiceMemory::Create(FLAGS_mode, OptionsFromFlags(), &error);
  if (memory != nullptr) {
    if (FLAGS_request_parse == "merge") {
      memory->Serve(service, "arenarpc.example.GrpcEchoService.Echo",
                    &arenarpc::example::GrpcEchoServiceImpl::Echo, &error);
    } else {
      service.SetMessageAllocatorFor_Echo(
          memory->allocator<arenarpc::example::EchoRequest, arenarpc::example::EchoResponse>(
              &error));
    }
  }
  if (!error.empty()) return Fail(std::string("--mode=") + FLAGS_mode + ": " + error);

  ShutdownSignal shutdown_signal;  // before gRPC's threads exist, so they inherit the mask
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(FLAGS_address, grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  builder.RegisterService(&service);
  if (FLAGS_release_at_serialize) {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
    creators.push_back(arenarpc::grpc_memory::ReleaseAtSerializeInterceptorFactory());
    builder.experimental().SetInterceptorCreators(std::move(creators));
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) return Fail("cannot listen on " + FLAGS_address);

  const std::string host = FLAGS_address.substr(0, FLAGS_address.rfind(':'));
  std::printf("grpc_echo_server listening on %s:%d mode=%s pid=%d\n", host.c_str(), port,
              FLAGS_mode.c_str(), static_cast<int>(getpid()));
  std::fflush(stdout);

  const int signal = shutdown_signal.Wait();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  server->Wait();
  server.reset();

  const arenarpc::memory::MemoryStats stats = memory->memory_stats();
  const arenarpc::grpc_memory::HolderStats holders = memory->holder_stats();
  std::fprintf(stderr,
               "grpc_echo_server: signal %d, stopped; mode=%s holders allocated=%llu "
               "released=%llu (at serialize %llu); strategy acquired=%llu released=%llu "
               "reuses=%llu rebuilds=%llu pooled=%llu retained_bytes~%llu\n",
               signal, FLAGS_mode.c_str(), static_cast<unsigned long long>(holders.allocated),
               static_cast<unsigned long long>(holders.released),
               static_cast<unsigned long long>(holders.released_at_serialize),
               static_cast<unsigned long long>(stats.acquired),
               static_cast<unsigned long long>(stats.released),
               static_cast<unsigned long long>(stats.reuses),
               static_cast<unsigned long long>(stats.rebuilds),
               static_cast<unsigned long long>(stats.objects_pooled),
               static_cast<unsigned long long>(stats.retained_bytes_estimate));
  return holders.allocated == holders.released ? 0 : 1;
}
