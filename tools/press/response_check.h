#pragma once
// ResponseCheck: what arenarpc_press checks in each successful response.
//   replay        --replay_check: the reply to a record equals the one the first pass got for it
//                 (replay_set.h); differences are counted by method (ReplayDifferences)
//   none          --method without --check_response: responses are not parsed by type
//   echo          --verify (echo workload): the response's payload equals the request's
//   output type   --check_response: the response is a valid message of the method's output type
//                 with no field that type does not declare (a sign that the server answers with
//                 another message type or another version of the .proto)

#include <google/protobuf/message.h>

#include <map>
#include <mutex>
#include <string>

#include "press/press_request.h"
#include "press/transport.h"

namespace arenarpc::press {

// --replay_check's differences, by method ("pkg.Service.Method"). Thread-safe.
class ReplayDifferences {
 public:
  void Count(const std::string& method) {
    std::lock_guard lock(mutex_);
    ++by_method_[method];
  }
  std::map<std::string, uint64_t> by_method() const {
    std::lock_guard lock(mutex_);
    return by_method_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, uint64_t> by_method_;
};

// A failure of the load rather than an answer of the handler: the call was not run (refused by
// an overloaded or stopping server, its connection lost) or its reply came too late. Such a reply
// is neither a reference for --replay_check nor a difference from one.
bool IsLoadFailure(int error_code) noexcept;

// The bytes --replay_check compares: the response message's bytes, the HTTP body, or
// "error <code>" for a failed call.
std::string ReplyBytes(const CallResult& result);

class ResponseCheck {
 public:
  static ResponseCheck None() { return ResponseCheck(Kind::kNone, nullptr); }
  static ResponseCheck Echo() { return ResponseCheck(Kind::kEcho, nullptr); }
  // `prototype` (the output type) must outlive the check.
  static ResponseCheck OutputType(const google::protobuf::Message& prototype) {
    return ResponseCheck(Kind::kOutputType, &prototype);
  }
  // `differences` must outlive the check.
  static ResponseCheck Replay(ReplayDifferences& differences) {
    ResponseCheck check(Kind::kReplay, nullptr);
    check.differences_ = &differences;
    return check;
  }

  // 0 when the successful call's response passes; else the press's error code (kEchoMismatch,
  // kResponseMismatch) with *text saying why. Thread-safe.
  int Check(const PressRequest& request, const CallResult& call, std::string* text) const;

 private:
  enum class Kind { kNone, kEcho, kOutputType, kReplay };
  ResponseCheck(Kind kind, const google::protobuf::Message* prototype)
      : kind_(kind), prototype_(prototype) {}

  int CheckEcho(const PressRequest& request, const CallResult& call, std::string* text) const;
  int CheckOutputType(const CallResult& call, std::string* text) const;
  int CheckReplay(const PressRequest& request, const CallResult& call, std::string* text) const;

  Kind kind_;
  const google::protobuf::Message* prototype_;
  ReplayDifferences* differences_ = nullptr;
};

// The path of the first field `message` (or a message inside it) holds that its type does not
// declare, e.g. "items[2].<unknown field 7>"; empty when there is none.
std::string FirstUnknownField(const google::protobuf::Message& message);

}  // namespace arenarpc::press
