#pragma once
// GoodClient: a well-behaved client on its own channel calling Echo until stopped, counting
// failures: what the hostile-load tests check keeps working while a bad client attacks.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "arenarpc/channel.h"
#include "arenarpc/controller.h"
#include "e2e_test.pb.h"

namespace arenarpc::e2e {

class GoodClient {
 public:
  explicit GoodClient(std::unique_ptr<Channel> channel)
      : channel_(std::move(channel)), thread_([this] { Loop(); }) {}
  ~GoodClient() { Stop(); }
  void Stop() {
    done_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  int calls() const { return calls_.load(); }
  int failures() const { return failures_.load(); }
  std::string last_error() {
    std::lock_guard lock(mutex_);
    return last_error_;
  }

 private:
  void Loop() {
    TestService_Stub stub(channel_.get());
    for (int i = 0; !done_.load() || i < 10; ++i) {
      Controller controller;
      TestRequest request;
      request.set_message("good-" + std::to_string(i));
      TestResponse response;
      stub.Echo(&controller, &request, &response, nullptr);
      if (controller.Failed() || response.message() != request.message()) {
        failures_.fetch_add(1);
        std::lock_guard lock(mutex_);
        last_error_ = controller.ErrorText();
      } else {
        calls_.fetch_add(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  std::unique_ptr<Channel> channel_;
  std::atomic<bool> done_{false};
  std::atomic<int> calls_{0}, failures_{0};
  std::mutex mutex_;
  std::string last_error_;
  std::thread thread_;
};

}  // namespace arenarpc::e2e
