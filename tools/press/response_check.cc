#include "press/response_check.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/unknown_field_set.h>
#include <google/protobuf/util/json_util.h>

#include <cerrno>
#include <memory>

#include "arenarpc/error_codes.h"
#include "echo/echo_payload.pb.h"
#include "press/press_result.h"
#include "press/replay_set.h"

namespace arenarpc::press {
namespace {

namespace pb = google::protobuf;

std::string UnknownFieldPath(const pb::Message& message, const std::string& prefix) {
  const pb::Reflection& reflection = *message.GetReflection();
  const pb::UnknownFieldSet& unknown = reflection.GetUnknownFields(message);
  if (!unknown.empty()) {
    return prefix + "<unknown field " + std::to_string(unknown.field(0).number()) + ">";
  }
  std::vector<const pb::FieldDescriptor*> fields;
  reflection.ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    const std::string name = prefix + field->name();
    if (!field->is_repeated()) {
      if (auto path = UnknownFieldPath(reflection.GetMessage(message, field), name + ".");
          !path.empty()) {
        return path;
      }
      continue;
    }
    const int n = reflection.FieldSize(message, field);
    for (int i = 0; i < n; ++i) {
      if (auto path = UnknownFieldPath(reflection.GetRepeatedMessage(message, field, i),
                                       name + "[" + std::to_string(i) + "].");
          !path.empty()) {
        return path;
      }
    }
  }
  return "";
}

}  // namespace

std::string FirstUnknownField(const pb::Message& message) { return UnknownFieldPath(message, ""); }

int ResponseCheck::Check(const PressRequest& request, const CallResult& call,
                         std::string* text) const {
  switch (kind_) {
    case Kind::kNone: return 0;
    case Kind::kEcho: return CheckEcho(request, call, text);
    case Kind::kOutputType: return CheckOutputType(call, text);
    case Kind::kReplay: return CheckReplay(request, call, text);
  }
  return 0;
}

bool IsLoadFailure(int error_code) noexcept {
  switch (error_code) {
    case ERPCTIMEDOUT:
    case EFAILEDSOCKET:
    case EOVERCROWDED:
    case EEOF:
    case ELOGOFF:
    case ELIMIT:
    case ECONNREFUSED:
    case ECONNRESET:
    case ETIMEDOUT:
    case EHOSTDOWN:
    case ENETUNREACH:
    case ECANCELED:
      return true;
    default:
      return false;
  }
}

std::string ReplyBytes(const CallResult& result) {
  if (result.error_code != 0) return "error " + std::to_string(result.error_code);
  if (result.response_message != nullptr) return result.response_message->SerializeAsString();
  if (result.json_body) return std::string(result.response_json);
  return std::string(result.response_payload);
}

int ResponseCheck::CheckReplay(const PressRequest& request, const CallResult& call,
                               std::string* text) const {
  const ReplayCall* replay = request.replay;
  if (replay == nullptr || !replay->has_first_reply) return 0;
  if (ReplyBytes(call) == replay->first_reply) return 0;
  differences_->Count(replay->method_name);
  *text = "press: the reply to a record of " + replay->method_name +
          " differs from the first pass's";
  return kReplayMismatch;
}

int ResponseCheck::CheckEcho(const PressRequest& request, const CallResult& call,
                             std::string* text) const {
  if (!request.is_echo) return 0;
  if (!call.json_body) {
    if (call.response_payload == request.echo.payload()) return 0;
    *text = "press: response payload differs from the request's";
    return kEchoMismatch;
  }
  // HTTP+JSON: the JSON is parsed back into the payload and compared as serialized bytes (the
  // workload has no map field, so serialization is deterministic).
  example::EchoResponse response;
  const auto status = pb::util::JsonStringToMessage(
      pb::StringPiece(call.response_json.data(), call.response_json.size()), &response);
  if (!status.ok()) {
    *text = "press: response is not an EchoResponse in JSON: " + std::string(status.message());
    return kEchoMismatch;
  }
  if (response.payload().SerializeAsString() == request.echo.payload()) return 0;
  *text = "press: response payload differs from the request's";
  return kEchoMismatch;
}

int ResponseCheck::CheckOutputType(const CallResult& call, std::string* text) const {
  const pb::Message* message = call.response_message;
  std::unique_ptr<pb::Message> parsed;
  if (call.json_body) {
    parsed.reset(prototype_->New());
    pb::util::JsonParseOptions options;
    options.ignore_unknown_fields = false;
    const auto status = pb::util::JsonStringToMessage(
        pb::StringPiece(call.response_json.data(), call.response_json.size()), parsed.get(),
        options);
    if (!status.ok()) {
      *text = "press: response is not a " + prototype_->GetTypeName() + " in JSON: " +
              std::string(status.message());
      return kResponseMismatch;
    }
    message = parsed.get();
  }
  if (message == nullptr) {
    *text = "press: the transport handed over no response to check";
    return kResponseMismatch;
  }
  if (!message->IsInitialized()) {
    *text = "press: response misses required fields: " + message->InitializationErrorString();
    return kResponseMismatch;
  }
  if (const std::string path = FirstUnknownField(*message); !path.empty()) {
    *text = "press: response has a field " + prototype_->GetTypeName() + " does not declare: " +
            path;
    return kResponseMismatch;
  }
  return 0;
}

}  // namespace arenarpc::press
