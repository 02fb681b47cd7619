#include "test_service.h"

#include <chrono>
#include <thread>

#include <pthread.h>

#include "arenarpc/controller.h"

namespace arenarpc::e2e {

TestServiceImpl::~TestServiceImpl() {
  ReleaseRetained();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(retain_mutex_);
    threads.swap(retain_threads_);
  }
  for (auto& thread : threads) thread.join();
}

void TestServiceImpl::ReleaseRetained() {
  {
    std::lock_guard lock(retain_mutex_);
    retain_release_ = true;
  }
  retain_released_.notify_all();
}

void TestServiceImpl::Echo(google::protobuf::RpcController* controller,
                           const TestRequest* request, TestResponse* response,
                           google::protobuf::Closure* done) {
  Handle(controller, request, response, done);
}

void TestServiceImpl::Echo2(google::protobuf::RpcController* controller,
                            const TestRequest* request, TestResponse* response,
                            google::protobuf::Closure* done) {
  Handle(controller, request, response, done);
}

void TestServiceImpl::Handle(google::protobuf::RpcController* controller_base,
                             const TestRequest* request, TestResponse* response,
                             google::protobuf::Closure* done) {
  handler_calls_.fetch_add(1);
  auto* controller = static_cast<Controller*>(controller_base);
  if (request->block_ms() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(request->block_ms()));
  }
  if (request->response_bytes() > 0) {
    response->set_message(std::string(static_cast<size_t>(request->response_bytes()), 'r'));
  } else if (!request->omit_required()) {
    response->set_message(request->message());
  }
  for (const auto& item : request->items()) response->add_items(item);
  response->set_log_id(controller->log_id());
  if (!controller->request_id().empty()) response->set_request_id(controller->request_id());
  if (const AuthContext* auth = controller->auth_context()) response->set_auth_user(auth->user());
  if (const TlsPeer* peer = controller->tls_peer()) {
    std::string sans;
    for (const std::string& san : peer->sans) sans += (sans.empty() ? "" : ",") + san;
    response->set_tls_peer("cn=" + peer->common_name + " sans=" + sans +
                           " verified=" + (peer->verified ? "1" : "0") + " alpn=" + peer->alpn +
                           " version=" + peer->version);
  }
  if (request->report_thread()) {
    char name[32] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    response->set_thread_name(name);
  }
  controller->response_attachment().Append(controller->request_attachment().ToString());
  for (const auto& [key, value] : controller->request_user_fields()) {
    controller->response_user_fields()[key] = value + "-back";
  }
  controller->set_response_compress_type(static_cast<CompressType>(request->response_compress()));
  if (request->fail_code() == -1) {
    controller->SetFailed(request->fail_text());
  } else if (request->fail_code() != 0) {
    controller->SetFailed(request->fail_code(), request->fail_text());
    if (request->has_status_details()) {
      controller->set_grpc_status_details(request->status_details());
    }
  }

  if (request->retain()) {
    // Two-phase completion: reply now, keep reading both messages afterwards.
    std::shared_ptr<void> handle = controller->RetainMessages();
    done->Run();
    std::lock_guard lock(retain_mutex_);
    retain_threads_.emplace_back([this, handle = std::move(handle), request, response] {
      {
        std::unique_lock wait_lock(retain_mutex_);
        retain_released_.wait(wait_lock, [&] { return retain_release_; });
      }
      // Still ours: the pair was not released although the reply went out long ago.
      if (request->message() == response->message() && request->items_size() == response->items_size()) {
        retained_checks_passed_.fetch_add(1);
      }
      retained_checks_done_.fetch_add(1);
    });
    return;
  }
  if (request->reply_on_cancel()) {
    controller->NotifyOnCancel(done);
    return;
  }
  if (request->delay_ms() > 0 || request->async()) {
    executor_.RunAfter(std::chrono::milliseconds(request->delay_ms()), [done] { done->Run(); });
    return;
  }
  done->Run();
}

}  // namespace arenarpc::e2e
