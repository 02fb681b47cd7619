#pragma once
// RecordingService: the e2e TestService whose Echo keeps the bytes of every request it received
// (the parsed request serialized again, then the attachment), so that a test compares what a
// server got with what was captured or replayed.
#include <mutex>
#include <string>
#include <vector>

#include "arenarpc/controller.h"
#include "e2e_test.pb.h"

namespace arenarpc::capture_test {

class RecordingService final : public e2e::TestService {
 public:
  void Echo(google::protobuf::RpcController* controller, const e2e::TestRequest* request,
            e2e::TestResponse* response, google::protobuf::Closure* done) override {
    auto* cntl = static_cast<Controller*>(controller);
    {
      std::lock_guard lock(mutex_);
      received_.push_back(request->SerializeAsString() + cntl->request_attachment().ToString());
    }
    response->set_message("echo:" + request->message());
    done->Run();
  }
  std::vector<std::string> received() const {
    std::lock_guard lock(mutex_);
    return received_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> received_;
};

}  // namespace arenarpc::capture_test
