#include "server/connect_json.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/message.h>

#include <memory>

#include "memory/request_memory_gate.h"
#include "protocol/http/json_message.h"
#include "server/method_entry.h"

namespace arenarpc::server {

bool HasNoSideEffects(const MethodEntry& entry) {
  return entry.descriptor != nullptr &&
         entry.descriptor->options().idempotency_level() ==
             google::protobuf::MethodOptions::NO_SIDE_EFFECTS;
}

std::string ConnectGetRefusal(std::string_view method_full_name) {
  return "Connect GET calls methods without side effects (option idempotency_level = "
         "NO_SIDE_EFFECTS); call " + std::string(method_full_name) + " with POST\n";
}

bool OpenJsonRequest(const google::protobuf::Message& prototype, memory::RequestMemoryGate& gate,
                     const net::BufferChain& json_body, protocol::PayloadBytes* bytes,
                     std::string* error_text, bool* too_large) {
  if (json_body.empty()) return true;  // the empty message
  std::string flat;  // only when the body spans more than one block
  const std::string_view json =
      json_body.span_count() == 1
          ? std::string_view(json_body.span(0).data(), json_body.span(0).size())
          : std::string_view(flat = json_body.ToString());
  if (auto verdict = gate.AdmitJson(json);
      verdict.verdict != memory::RequestMemoryGate::Verdict::kAdmitted) {
    *too_large = true;
    *error_text = std::move(verdict.text);
    return false;
  }
  std::string wire;
  if (!protocol::JsonToWire(prototype, json, &wire, error_text)) return false;
  net::BufferChain converted;
  converted.Append(wire);
  bytes->Own(std::move(converted));  // after the conversion: `json` may point into *bytes
  return true;
}

std::string StreamJsonToWire(const MethodBinding& binding, std::string json) {
  std::string wire, error;
  if (!protocol::JsonToWire(binding.memory->request_prototype(), json, &wire, &error)) {
    return json;
  }
  return wire;
}

bool StreamWireToJson(const MethodBinding& binding, const std::string& wire, std::string* json) {
  std::unique_ptr<google::protobuf::Message> response(
      binding.memory->response_prototype().New());
  std::string error;
  return response->ParseFromString(wire) &&
         protocol::MessageToJson(*response, json, &error, /*via_wire=*/false);
}

}  // namespace arenarpc::server
