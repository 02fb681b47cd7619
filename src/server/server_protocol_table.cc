#include "server/server_protocol_table.h"

#include <array>

#include "server/baidu_std_server_protocol.h"
#include "server/grpc_server_protocol.h"
#include "server/http_server_protocol.h"

namespace arenarpc::server {
namespace {

const std::array<ServerProtocolEntry, 3> kProtocols = {{
    {"baidu_std", protocol::WireProtocol::kBaiduStd, &BaiduStdServerProtocol::Create},
    {"http", protocol::WireProtocol::kHttp, &HttpServerProtocol::Create},
    {"h2:grpc", protocol::WireProtocol::kHttp2, &GrpcServerProtocol::Create},
}};

}  // namespace

const ServerProtocolEntry* FindServerProtocol(protocol::WireProtocol wire) {
  for (const ServerProtocolEntry& entry : kProtocols) {
    if (entry.wire == wire) return &entry;
  }
  return nullptr;
}

}  // namespace arenarpc::server
