#pragma once
// PressRequest: one request of a run, built before the load starts in every encoding a transport
// sends, so that a call costs no serialization and no JSON.

#include <google/protobuf/message.h>

#include <string>

#include "press/press_wire.pb.h"

namespace arenarpc::press {

struct ReplayCall;

struct PressRequest {
  bool is_echo = true;
  RawEchoRequest echo;  // echo workload: sent by binary protocols; its payload is what --verify expects
  OpaqueMessage user;   // --method: the request's serialized bytes (see press_wire.proto)
  std::string json;     // the request in JSON, for HTTP+JSON (empty when no transport needs it)
  const ReplayCall* replay = nullptr;  // --replay: the record (replay_set.h); `user` its message

  // What binary protocols (baidu_std, grpc) send.
  const google::protobuf::Message& binary() const {
    return is_echo ? static_cast<const google::protobuf::Message&>(echo) : user;
  }
};

}  // namespace arenarpc::press
