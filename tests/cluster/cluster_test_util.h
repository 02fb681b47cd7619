#pragma once
// Helpers of the cluster tests: real arenarpc servers on 127.0.0.1 (random ports) whose echo
// handler can be slowed down, and a call that reports which server answered.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "arenarpc/channel.h"
#include "arenarpc/server.h"
#include "client_test.pb.h"

namespace arenarpc::testing {

class ClusterEcho : public ::example::EchoService {
 public:
  void Echo(google::protobuf::RpcController* cntl, const ::example::EchoRequest* request,
            ::example::EchoResponse* response, google::protobuf::Closure* done) override {
    calls_.fetch_add(1, std::memory_order_relaxed);
    if (fail_.load()) {
      static_cast<Controller*>(cntl)->SetFailed(EINTERNAL, "this server fails every call");
      done->Run();
      return;
    }
    // Only the first `slow_calls_` calls (all if negative) sleep delay_ms_.
    const int delay = delay_ms_.load();
    if (delay > 0 && (slow_calls_.load() < 0 || slow_calls_.fetch_sub(1) > 0)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    }
    response->set_message(request->message());
    done->Run();
  }
  void set_delay_ms(int ms, int slow_calls = -1) {
    slow_calls_.store(slow_calls);
    delay_ms_.store(ms);
  }
  int calls() const { return calls_.load(); }
  void set_fail(bool fail) { fail_.store(fail); }

 private:
  std::atomic<int> delay_ms_{0};
  std::atomic<int> slow_calls_{-1};
  std::atomic<int> calls_{0};
  std::atomic<bool> fail_{false};
};

// One server; Start(port) may reuse the port of a stopped one (restart).
class TestServer {
 public:
  bool Start(int port = 0) {
    ServerOptions options;
    options.num_threads = 2;
    return Start(port, options);
  }
  bool Start(int port, const ServerOptions& options, bool expect_success = true) {
    server_ = std::make_unique<Server>();
    if (server_->AddService(&service_, SERVER_DOESNT_OWN_SERVICE) != 0) return false;
    if (server_->Start("127.0.0.1:" + std::to_string(port), options) != 0) {
      if (expect_success) ADD_FAILURE() << server_->last_error();
      last_error_ = server_->last_error();
      server_.reset();
      return false;
    }
    port_ = server_->listen_port();
    return true;
  }
  const std::string& last_error() const { return last_error_; }
  void Stop() {
    if (!server_) return;
    server_->Stop();
    server_->Join();
    server_.reset();
  }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  ClusterEcho& service() { return service_; }

 private:
  ClusterEcho service_;
  std::unique_ptr<Server> server_;
  int port_ = 0;
  std::string last_error_;
};

struct CallOutcome {
  int error_code = 0;
  std::string error_text;
  std::string server;  // remote_side of the answer
};

inline CallOutcome CallEcho(Channel& channel, const std::string& message,
                            const uint64_t* request_code = nullptr) {
  ::example::EchoService_Stub stub(&channel);
  Controller cntl;
  if (request_code != nullptr) cntl.set_request_code(*request_code);
  ::example::EchoRequest request;
  request.set_message(message);
  ::example::EchoResponse response;
  stub.Echo(&cntl, &request, &response, nullptr);
  CallOutcome outcome{cntl.ErrorCode(), cntl.ErrorText(), cntl.remote_side()};
  if (!cntl.Failed() && response.message() != message) {
    outcome.error_code = -1;
    outcome.error_text = "wrong echo '" + response.message() + "'";
  }
  return outcome;
}

inline ChannelOptions ClusterOptions() {
  ChannelOptions options;
  options.timeout_ms = 2000;
  options.connect_timeout_ms = 200;
  options.health_check_interval = std::chrono::milliseconds(50);
  options.naming_refresh_interval = std::chrono::milliseconds(100);
  return options;
}

// Polls `condition` every 10 ms for up to `limit`.
template <class Condition>
bool WaitFor(Condition condition, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

}  // namespace arenarpc::testing
