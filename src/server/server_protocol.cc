#include "server/server_protocol.h"

#include <array>

#include "protocol/payload_codec.h"
#include "server/baidu_std_server_protocol.h"
#include "server/call_task.h"
#include "server/grpc_server_protocol.h"
#include "server/http_server_protocol.h"
#include "server/server_call.h"

namespace arenarpc::server {

namespace {

const std::array<ServerProtocolEntry, 3> kProtocols = {{
    {"baidu_std", protocol::WireProtocol::kBaiduStd, &BaiduStdServerProtocol::Create},
    {"http", protocol::WireProtocol::kHttp, &HttpServerProtocol::Create},
    {"h2:grpc", protocol::WireProtocol::kHttp2, &GrpcServerProtocol::Create},
}};

}  // namespace

std::unique_ptr<AdmittedTask> ServerProtocol::TakeTask(net::Connection& /*connection*/,
                                                       size_t* /*request_size*/) {
  return nullptr;  // Next() never answers kTask
}

std::string ServerProtocol::ParseFailureText(const ServerCall& call,
                                             const RequestPayload& payload) {
  return protocol::ParseFailureText("request", call.request(), payload.encoding,
                                    payload.request_size);
}

bool ServerProtocol::OpenMetaPayload(ServerCall& call, const RequestPayload& payload,
                                     protocol::PayloadBytes* bytes, std::string* error_text,
                                     size_t max_body_size) {
  std::string detail;
  if (protocol::OpenPayload(payload.encoding, payload.bytes, call.controller().request_attachment(),
                            bytes, &detail, max_body_size)) {
    return true;
  }
  // brpc's text, as for bytes that do not parse, and then why (a body that inflates past
  // max_body_size says so).
  *error_text = ParseFailureText(call, payload) + ": " + detail;
  return false;
}

const ServerProtocolEntry* FindServerProtocol(protocol::WireProtocol wire) {
  for (const ServerProtocolEntry& entry : kProtocols) {
    if (entry.wire == wire) return &entry;
  }
  return nullptr;
}

}  // namespace arenarpc::server
