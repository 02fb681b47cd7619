#pragma once
// ResponseCheck: what arenarpc_press checks in each successful response.
//   none          --method without --check_response: responses are not parsed by type
//   echo          --verify (echo workload): the response's payload equals the request's
//   output type   --check_response: the response is a valid message of the method's output type
//                 with no field that type does not declare (a sign that the server answers with
//                 another message type or another version of the .proto)

#include <google/protobuf/message.h>

#include <string>

#include "press/press_request.h"
#include "press/transport.h"

namespace arenarpc::press {

class ResponseCheck {
 public:
  static ResponseCheck None() { return ResponseCheck(Kind::kNone, nullptr); }
  static ResponseCheck Echo() { return ResponseCheck(Kind::kEcho, nullptr); }
  // `prototype` (the output type) must outlive the check.
  static ResponseCheck OutputType(const google::protobuf::Message& prototype) {
    return ResponseCheck(Kind::kOutputType, &prototype);
  }

  // 0 when the successful call's response passes; else the press's error code (kEchoMismatch,
  // kResponseMismatch) with *text saying why. Thread-safe.
  int Check(const PressRequest& request, const CallResult& call, std::string* text) const;

 private:
  enum class Kind { kNone, kEcho, kOutputType };
  ResponseCheck(Kind kind, const google::protobuf::Message* prototype)
      : kind_(kind), prototype_(prototype) {}

  int CheckEcho(const PressRequest& request, const CallResult& call, std::string* text) const;
  int CheckOutputType(const CallResult& call, std::string* text) const;

  Kind kind_;
  const google::protobuf::Message* prototype_;
};

// The path of the first field `message` (or a message inside it) holds that its type does not
// declare, e.g. "items[2].<unknown field 7>"; empty when there is none.
std::string FirstUnknownField(const google::protobuf::Message& message);

}  // namespace arenarpc::press
