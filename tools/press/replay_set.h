#pragma once
// ReplaySet: the records of dump files (docs/capture.md) turned into requests arenarpc_press
// sends (--replay): each over the protocol it was captured on, or over --replay_protocol.
// Memory bound: every record is held, as read (the dump's size), plus its parsed form.
//
// Binary records (baidu_std, gRPC) are sent through arenarpc::Channel as OpaqueMessage (their
// bytes re-emitted as they are) to a method built at run time from the record's names, so no
// .proto is needed; HTTP records are written as the request the capture recorded. An HTTP+JSON
// record sent over baidu_std or gRPC needs its method's .proto (--proto) to become binary.

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "press/dynamic_method.h"
#include "press/press_request.h"

namespace arenarpc::press {

enum class ReplayProtocol { kBaiduStd, kHttp, kGrpc };
// "baidu_std" | "http" | "grpc"; false for anything else.
bool ParseReplayProtocol(std::string_view name, ReplayProtocol* protocol);
const char* ReplayProtocolName(ReplayProtocol protocol);

// One record, ready to send. Set up before the load; `first_reply` only by the --replay_check
// first pass, before the load starts (read-only afterwards).
struct ReplayCall {
  ReplayProtocol protocol = ReplayProtocol::kBaiduStd;
  std::string method_name;  // "pkg.Service.Method": what differences are counted by
  const google::protobuf::MethodDescriptor* method = nullptr;  // binary forms
  std::string attachment;   // baidu_std
  int compress_type = 0;    // sent compressed so (the message is held inflated)
  std::vector<std::pair<std::string, std::string>> metadata;  // gRPC
  std::string raw_http;     // HTTP: the whole request as written
  std::string first_reply;  // --replay_check
  bool has_first_reply = false;
};

class ReplaySet {
 public:
  // Reads every dump file of `sources` (files, or directories whose requests.* files are read in
  // name order). A damaged stretch is reported on `report` ("FILE: offset N: why, M bytes
  // skipped") and the rest is read. `force`: send every record over that protocol. false with
  // *error when nothing can be replayed (no file, no record, a record that cannot take the
  // forced protocol).
  // `schema` (--proto; may be null): the services' .proto, with which an HTTP+JSON record is
  // converted to its binary message when forced onto baidu_std or gRPC.
  bool Load(const std::vector<std::string>& sources, const ReplayProtocol* force,
            const DynamicMethod* schema, std::ostream& report, std::string* error);

  const std::vector<std::shared_ptr<const PressRequest>>& requests() const { return requests_; }
  // The calls, in record order (mutable for the --replay_check first pass).
  std::vector<ReplayCall>& calls() { return calls_; }
  uint64_t damaged_stretches() const { return damaged_; }
  // Records per protocol they will be sent over.
  const std::map<std::string, uint64_t>& by_protocol() const { return by_protocol_; }

 private:
  const google::protobuf::MethodDescriptor* MethodFor(const std::string& service,
                                                      const std::string& method,
                                                      std::string* error);

  google::protobuf::DescriptorPool pool_;
  std::map<std::string, google::protobuf::FileDescriptorProto> files_;  // by service
  std::vector<ReplayCall> calls_;
  std::vector<std::shared_ptr<const PressRequest>> requests_;
  uint64_t damaged_ = 0;
  std::map<std::string, uint64_t> by_protocol_;
};

}  // namespace arenarpc::press
