#include "server/server_protocol.h"

#include <array>

#include "protocol/payload_codec.h"
#include "server/baidu_std_server_protocol.h"
#include "server/http_server_protocol.h"
#include "server/server_call.h"

namespace arenarpc::server {

namespace {

const std::array<ServerProtocolEntry, 2> kProtocols = {{
    {"baidu_std", protocol::WireProtocol::kBaiduStd, &BaiduStdServerProtocol::Create},
    {"http", protocol::WireProtocol::kHttp, &HttpServerProtocol::Create},
}};

}  // namespace

std::string ServerProtocol::ParseFailureText(const ServerCall& call,
                                             const RequestPayload& payload) {
  return protocol::ParseFailureText("request", call.request(), payload.meta, payload.request_size);
}

const ServerProtocolEntry* FindServerProtocol(protocol::WireProtocol wire) {
  for (const ServerProtocolEntry& entry : kProtocols) {
    if (entry.wire == wire) return &entry;
  }
  return nullptr;
}

}  // namespace arenarpc::server
