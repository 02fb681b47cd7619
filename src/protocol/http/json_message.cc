#include "protocol/http/json_message.h"

#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>

#include <memory>

namespace arenarpc::protocol {

bool JsonToWire(const google::protobuf::Message& prototype, std::string_view json,
                std::string* wire, std::string* error) {
  std::unique_ptr<google::protobuf::Message> message(prototype.New());
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::stringpiece_internal::StringPiece(json.data(), json.size()),
      message.get(), options);
  if (!status.ok()) {
    *error = "invalid JSON for " + message->GetTypeName() + ": " + std::string(status.message());
    return false;
  }
  if (!message->IsInitialized()) {
    *error = "JSON for " + message->GetTypeName() +
             " misses required fields: " + message->InitializationErrorString();
    return false;
  }
  if (!message->AppendToString(wire)) {
    *error = "cannot serialize " + message->GetTypeName();
    return false;
  }
  return true;
}

bool MessageToJson(const google::protobuf::Message& message, std::string* json,
                   std::string* error) {
  if (!message.IsInitialized()) {
    *error = "missing required fields in " + message.GetTypeName() + ": " +
             message.InitializationErrorString();
    return false;
  }
  std::string wire;
  std::unique_ptr<google::protobuf::Message> copy(message.New());
  if (!message.SerializeToString(&wire) || !copy->ParseFromString(wire)) {
    *error = "cannot serialize " + message.GetTypeName();
    return false;
  }
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  const auto status = google::protobuf::util::MessageToJsonString(*copy, json, options);
  if (!status.ok()) {
    *error = "cannot print " + message.GetTypeName() + " as JSON: " + std::string(status.message());
    return false;
  }
  return true;
}

}  // namespace arenarpc::protocol
