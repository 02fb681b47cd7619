#include "server/server_protocol.h"

#include <array>

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

const ServerProtocolEntry* FindServerProtocol(protocol::WireProtocol wire) {
  for (const ServerProtocolEntry& entry : kProtocols) {
    if (entry.wire == wire) return &entry;
  }
  return nullptr;
}

}  // namespace arenarpc::server
