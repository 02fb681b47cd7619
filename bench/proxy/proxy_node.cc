// The proxy benchmark's processes (bench/proxy drives them):
//   proxy_node --role=backend --delay_ms=20   answers every Echo after delay_ms, holding no thread
//   proxy_node --role=front --backend=ip:port  each Echo makes one synchronous call to the backend
//   proxy_node --role=client --server=ip:port --concurrency=N --rounds=R
//       R rounds of N calls sent at once (asynchronously), each round waited for in full; prints
//       one JSON line with the rounds' wall times.
// The servers print "listening on port N" and run until SIGTERM, with default ServerOptions.
// Only the public API: the same source builds against any arenarpc version.
#include <gflags/gflags.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/callback.h"
#include "arenarpc/channel.h"
#include "arenarpc/closure_guard.h"
#include "arenarpc/controller.h"
#include "arenarpc/server.h"
#include "echo.pb.h"

DEFINE_string(role, "", "backend | front | client");
DEFINE_int32(port, 0, "servers: port to listen on (0 = any)");
DEFINE_int32(delay_ms, 20, "backend: answer after this long");
DEFINE_string(backend, "", "front: the backend's ip:port");
DEFINE_string(server, "", "client: the front's ip:port");
DEFINE_int32(concurrency, 64, "client: calls sent at once per round");
DEFINE_int32(rounds, 20, "client: measured rounds");
DEFINE_int32(warmup_rounds, 3, "client: rounds before the measured ones");

namespace {

using Clock = std::chrono::steady_clock;

// Runs closures at their due time on one thread: the backend's replies leave from here.
class Delayer {
 public:
  Delayer() : thread_([this] { Loop(); }) {}
  ~Delayer() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    changed_.notify_one();
    thread_.join();
  }
  void RunAt(Clock::time_point when, google::protobuf::Closure* done) {
    {
      std::lock_guard lock(mutex_);
      due_.emplace(when, done);
    }
    changed_.notify_one();
  }

 private:
  void Loop() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      if (due_.empty()) {
        changed_.wait(lock);
      } else if (due_.begin()->first > Clock::now()) {
        changed_.wait_until(lock, due_.begin()->first);
      } else {
        google::protobuf::Closure* done = due_.begin()->second;
        due_.erase(due_.begin());
        lock.unlock();
        done->Run();
        lock.lock();
      }
    }
  }
  std::mutex mutex_;
  std::condition_variable changed_;
  std::multimap<Clock::time_point, google::protobuf::Closure*> due_;
  bool stop_ = false;
  std::thread thread_;
};

class Backend final : public example::EchoService {
 public:
  void Echo(google::protobuf::RpcController*, const example::EchoRequest* request,
            example::EchoResponse* response, google::protobuf::Closure* done) override {
    response->set_message(request->message());
    delayer_.RunAt(Clock::now() + std::chrono::milliseconds(FLAGS_delay_ms), done);
  }

 private:
  Delayer delayer_;
};

class Front final : public example::EchoService {
 public:
  explicit Front(arenarpc::Channel* channel) : stub_(channel) {}
  void Echo(google::protobuf::RpcController* controller, const example::EchoRequest* request,
            example::EchoResponse* response, google::protobuf::Closure* done) override {
    arenarpc::ClosureGuard guard(done);
    arenarpc::Controller backend;
    stub_.Echo(&backend, request, response, nullptr);  // synchronous: the proxy's shape
    if (backend.Failed()) {
      static_cast<arenarpc::Controller*>(controller)->SetFailed(backend.ErrorCode(), "%s",
                                                                backend.ErrorText().c_str());
    }
  }

 private:
  example::EchoService_Stub stub_;
};

int Serve(google::protobuf::Service* service) {
  arenarpc::Server server;
  if (server.AddService(service, arenarpc::SERVER_DOESNT_OWN_SERVICE) != 0 ||
      server.Start(("127.0.0.1:" + std::to_string(FLAGS_port)).c_str(), nullptr) != 0) {
    std::fprintf(stderr, "%s\n", server.last_error().c_str());
    return 1;
  }
  std::printf("listening on port %d\n", server.listen_port());
  std::fflush(stdout);
  server.RunUntilAskedToQuit();
  return 0;
}

bool InitChannel(arenarpc::Channel* channel, const std::string& address) {
  arenarpc::ChannelOptions options;
  options.timeout_ms = 30000;
  if (channel->Init(address.c_str(), &options) == 0) return true;
  std::fprintf(stderr, "%s\n", channel->last_error().c_str());
  return false;
}

int RunClient() {
  arenarpc::Channel channel;
  if (!InitChannel(&channel, FLAGS_server)) return 1;
  example::EchoService_Stub stub(&channel);
  const size_t n = static_cast<size_t>(FLAGS_concurrency);
  std::vector<double> wall_ms;
  int failed = 0;
  for (int round = 0; round < FLAGS_warmup_rounds + FLAGS_rounds; ++round) {
    std::vector<arenarpc::Controller> controllers(n);
    std::vector<example::EchoRequest> requests(n);
    std::vector<example::EchoResponse> responses(n);
    const auto start = Clock::now();
    for (size_t i = 0; i < n; ++i) {
      requests[i].set_message("proxy me");
      stub.Echo(&controllers[i], &requests[i], &responses[i], arenarpc::DoNothing());
    }
    for (auto& controller : controllers) arenarpc::Join(controller.call_id());
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    for (const auto& controller : controllers) failed += controller.Failed() ? 1 : 0;
    if (round >= FLAGS_warmup_rounds) wall_ms.push_back(ms);
  }
  std::sort(wall_ms.begin(), wall_ms.end());
  std::printf("{\"concurrency\": %d, \"rounds\": %d, \"wall_ms_median\": %.2f, "
              "\"wall_ms_min\": %.2f, \"wall_ms_max\": %.2f, \"failed\": %d}\n",
              FLAGS_concurrency, FLAGS_rounds, wall_ms[wall_ms.size() / 2], wall_ms.front(),
              wall_ms.back(), failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char* argv[]) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_role == "backend") {
    Backend backend;
    return Serve(&backend);
  }
  if (FLAGS_role == "front") {
    arenarpc::Channel channel;
    if (!InitChannel(&channel, FLAGS_backend)) return 1;
    Front front(&channel);
    return Serve(&front);
  }
  if (FLAGS_role == "client") return RunClient();
  std::fprintf(stderr, "--role must be backend, front or client\n");
  return 2;
}
