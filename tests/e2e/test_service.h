#pragma once
// The e2e test service: what a call does is chosen by fields of its request (see e2e_test.proto).

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "delayed_executor.h"
#include "e2e_test.pb.h"

namespace arenarpc::e2e {

class TestServiceImpl final : public TestService {
 public:
  TestServiceImpl() = default;
  ~TestServiceImpl() override;  // lets retained work finish, then joins its threads

  void Echo(google::protobuf::RpcController* controller, const TestRequest* request,
            TestResponse* response, google::protobuf::Closure* done) override;
  void Echo2(google::protobuf::RpcController* controller, const TestRequest* request,
             TestResponse* response, google::protobuf::Closure* done) override;

  // Two-phase calls wait for this before they finish their background work and drop their handle.
  void ReleaseRetained();
  int retained_checks_passed() const { return retained_checks_passed_.load(); }
  int retained_checks_done() const { return retained_checks_done_.load(); }
  int handler_calls() const { return handler_calls_.load(); }
  DelayedExecutor& executor() { return executor_; }

 private:
  void Handle(google::protobuf::RpcController* controller, const TestRequest* request,
              TestResponse* response, google::protobuf::Closure* done);

  DelayedExecutor executor_;
  std::atomic<int> handler_calls_{0};
  std::mutex retain_mutex_;
  std::condition_variable retain_released_;
  bool retain_release_ = false;
  std::vector<std::thread> retain_threads_;
  std::atomic<int> retained_checks_passed_{0}, retained_checks_done_{0};
};

}  // namespace arenarpc::e2e
