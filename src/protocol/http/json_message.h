#pragma once
// JSON bodies of HTTP calls <-> the protobuf wire form, in protobuf's JSON mapping: a reflection
// converter here for most types, protobuf's json_util for types that reach a well-known type
// (google.protobuf.Timestamp, Any, Struct, wrappers, ...: their JSON forms are special). The
// conversion goes through the wire form on both sides so that a call's messages are still created,
// parsed and prepared by the method's memory strategy (docs/memory.md) exactly as for baidu_std
// calls, and the JSON of a reply is what the bytes `heap` would send say.
//
// Field names: requests accept both the proto names and the JSON names (lowerCamelCase); replies
// use the proto names (as brpc's json2pb does). Unknown fields are an error, null is "not set",
// 64-bit integers print as strings, bytes as base64, enums by name. Each thread keeps one plain
// message per type it converted (cleared between calls) as scratch space.

#include <string>
#include <string_view>

namespace google::protobuf {
class Message;
}

namespace arenarpc::protocol {

// Parses `json` as a message of `prototype`'s type and appends its wire form to *wire.
// false: *error says why (unknown field, wrong type, invalid JSON, missing required field).
bool JsonToWire(const google::protobuf::Message& prototype, std::string_view json,
                std::string* wire, std::string* error);

// The JSON of `message` as its wire form reads. `via_wire`: serialize it and print a plain copy
// (for messages whose objects may say more than their bytes, as reuse's kept sub-messages);
// otherwise print it directly, which reads the same for plain messages and saves a round trip.
// false: *error says why (e.g. a required field is missing).
bool MessageToJson(const google::protobuf::Message& message, std::string* json, std::string* error,
                   bool via_wire = true);

}  // namespace arenarpc::protocol
