#pragma once
// What tests of src/server's parts start from: a ServerState with one method (EchoService.Echo,
// heap strategy) and its threads, as Server::Start() leaves it but without listening, and a
// loopback TCP pair whose accepted side a test wraps in a net::Connection.
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "arenarpc/controller.h"
#include "arenarpc/memory/message_memory.h"
#include "echo/echo.pb.h"
#include "memory/presence_advisor.h"
#include "memory/request_memory_gate.h"
#include "server/server_state.h"

namespace arenarpc::server {

// Polls `condition` until it holds or `limit` passed; whether it held.
template <class Condition>
bool WaitUntil(Condition condition,
               std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  for (const auto until = std::chrono::steady_clock::now() + limit; !condition();) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Echoes; fails with `fail_code` when set; while `hold` is set, waits (its thread) until
// Release(); counts its runs.
class EchoHandler final : public example::EchoService {
 public:
  void Echo(google::protobuf::RpcController* controller, const example::EchoRequest* request,
            example::EchoResponse* response, google::protobuf::Closure* done) override {
    runs.fetch_add(1);
    {
      std::unique_lock lock(mutex_);
      ++running_;
      changed_.notify_all();
      changed_.wait(lock, [&] { return !hold_; });
      --running_;
    }
    if (fail_code != 0) {
      static_cast<Controller*>(controller)->SetFailed(fail_code, "refused by the handler");
    } else {
      response->mutable_message()->CopyFrom(request->message());
    }
    done->Run();
  }
  void Hold() {
    std::lock_guard lock(mutex_);
    hold_ = true;
  }
  void Release() {
    std::lock_guard lock(mutex_);
    hold_ = false;
    changed_.notify_all();
  }
  // Waits until `n` handlers wait in Hold().
  void WaitRunning(int n) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return running_ >= n; });
  }

  std::atomic<int> runs{0};
  int fail_code = 0;

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool hold_ = false;
  int running_ = 0;
};

struct EchoServerState {
  EchoServerState(google::protobuf::Service* handler, const ServerOptions& options,
                  size_t max_request_memory = 64u << 20)
      : state(std::make_shared<ServerState>()) {
    state->config.options = options;
    state->runtime = std::make_unique<ServerRuntime>(state->config.options);
    state->admission.Configure(options.max_concurrency, options.max_queued_requests, 1);
    std::string error;
    if (state->config.registry.Add(handler, SERVER_DOESNT_OWN_SERVICE, &error) != 0) {
      throw std::runtime_error(error);
    }
    method = state->config.registry.methods().front().get();
    auto binding = std::make_shared<MethodBinding>();
    binding->mode = "heap";
    binding->strategy = memory::MakeMessageMemory(memory::MemoryMode::kHeap);
    binding->memory =
        binding->strategy->Bind(method->service->GetRequestPrototype(method->descriptor),
                                method->service->GetResponsePrototype(method->descriptor));
    method->request_memory = std::make_unique<memory::RequestMemoryGate>(
        *binding->memory->request_prototype().GetDescriptor(), max_request_memory);
    method->presence = std::make_unique<memory::PresenceAdvisor>(
        *binding->memory->response_prototype().GetDescriptor());
    method->SetBinding(std::move(binding));
  }

  std::shared_ptr<ServerState> state;
  MethodEntry* method = nullptr;
};

// A connected loopback pair: `accepted` is run by a thread of its own (wrap it in a
// net::Connection), `client` is a blocking socket of the test's.
class LoopbackPair {
 public:
  LoopbackPair() : work_(asio::make_work_guard(io_)) {
    asio::ip::tcp::acceptor acceptor(io_, {asio::ip::make_address("127.0.0.1"), 0});
    client.connect(acceptor.local_endpoint());
    acceptor.accept(accepted);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~LoopbackPair() {
    work_.reset();
    io_.stop();
    thread_.join();
  }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
  asio::io_context client_io_;

 public:
  asio::ip::tcp::socket accepted{io_};
  asio::ip::tcp::socket client{client_io_};
};

}  // namespace arenarpc::server
