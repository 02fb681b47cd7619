// stream_push_bench: messages per second of a server stream of small messages (docs/streaming.md,
// "Measured"). One process: an arenarpc server whose handler accepts the stream and pushes
// --messages messages of --message_bytes bytes, and a client that receives them on loopback.
// Prints wall time, messages/s and the process's CPU seconds per million messages.
//
//   build/release/bench/stream/stream_push_bench --messages 2000000 --message_bytes 16

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "arenarpc/channel.h"
#include "arenarpc/error_codes.h"
#include "arenarpc/fiber.h"
#include "arenarpc/server.h"
#include "arenarpc/stream.h"
#include "echo.pb.h"
#include "push_bench_support.h"

namespace {

using streambench::CpuSeconds;

class PushService : public example::EchoService {
 public:
  PushService(long messages, size_t bytes) : messages_(messages), payload_(bytes, 'x') {}
  void Echo(google::protobuf::RpcController* base, const example::EchoRequest* request,
            example::EchoResponse* response, google::protobuf::Closure* done) override {
    auto* cntl = static_cast<arenarpc::Controller*>(base);
    response->set_message(request->message());
    arenarpc::StreamOptions options;
    arenarpc::StreamId id;
    if (arenarpc::StreamAccept(&id, *cntl, &options) != 0) cntl->SetFailed("no stream");
    done->Run();
    const long n = messages_;
    const std::string payload = payload_;
    arenarpc::fiber::Start([id, n, payload] {
      arenarpc::IOBuf message;
      message.append(payload);
      for (long i = 0; i < n; ++i) {
        int rc;
        // EAGAIN: the window is full; EOVERCROWDED: the connection's unsent output is.
        while ((rc = arenarpc::StreamWrite(id, message)) == EAGAIN ||
               rc == arenarpc::EOVERCROWDED) {
          arenarpc::StreamWait(id, nullptr);
        }
        if (rc != 0) return;
      }
      arenarpc::StreamClose(id);
    });
  }

 private:
  const long messages_;
  const std::string payload_;
};

class Counter : public arenarpc::StreamInputHandler {
 public:
  int on_received_messages(arenarpc::StreamId, arenarpc::IOBuf* const[], size_t size) override {
    received.fetch_add(static_cast<long>(size), std::memory_order_relaxed);
    return 0;
  }
  void on_idle_timeout(arenarpc::StreamId) override {}
  void on_closed(arenarpc::StreamId) override {
    std::lock_guard lock(mutex);
    closed = true;
    cv.notify_all();
  }
  std::atomic<long> received{0};
  std::mutex mutex;
  std::condition_variable cv;
  bool closed = false;
};

}  // namespace

int main(int argc, char** argv) {
  long messages = 1000000;
  size_t message_bytes = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--messages") == 0) messages = std::atol(argv[i + 1]);
    if (std::strcmp(argv[i], "--message_bytes") == 0) message_bytes = std::atol(argv[i + 1]);
  }
  if (argc % 2 == 0 || messages <= 0) {
    std::fprintf(stderr, "usage: stream_push_bench [--messages N] [--message_bytes B]\n");
    return 2;
  }
  PushService service(messages, message_bytes);
  arenarpc::Server server;
  arenarpc::ServerOptions server_options;
  server_options.num_threads = 1;
  if (server.AddService(&service, arenarpc::SERVER_DOESNT_OWN_SERVICE) != 0 ||
      server.Start("127.0.0.1:0", server_options) != 0) {
    std::fprintf(stderr, "server: %s\n", server.last_error().c_str());
    return 1;
  }
  arenarpc::Channel channel;
  arenarpc::ChannelOptions options;
  options.timeout_ms = 10000;
  if (channel.Init("127.0.0.1:" + std::to_string(server.listen_port()), &options) != 0) return 1;
  Counter counter;
  arenarpc::StreamOptions stream_options;
  stream_options.handler = &counter;
  arenarpc::Controller cntl;
  arenarpc::StreamId id;
  arenarpc::StreamCreate(&id, cntl, &stream_options);
  example::EchoRequest request;
  request.set_message("push");
  example::EchoResponse response;
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  example::EchoService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
  if (cntl.Failed()) {
    std::fprintf(stderr, "call: %s\n", cntl.ErrorText().c_str());
    return 1;
  }
  {
    std::unique_lock lock(counter.mutex);
    counter.cv.wait(lock, [&] { return counter.closed; });
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = CpuSeconds() - cpu0;
  const long got = counter.received.load();
  std::printf("messages=%ld message_bytes=%zu wall_s=%.3f messages_per_s=%.0f "
              "cpu_s=%.3f messages_per_cpu_s=%.0f\n",
              got, message_bytes, wall, static_cast<double>(got) / wall, cpu,
              static_cast<double>(got) / cpu);
  return got == messages ? 0 : 1;
}
