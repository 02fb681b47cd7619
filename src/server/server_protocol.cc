#include "server/server_protocol.h"

#include "server/call_task.h"

namespace arenarpc::server {

std::unique_ptr<AdmittedTask> ServerProtocol::TakeTask(net::Connection& /*connection*/,
                                                       size_t* /*request_size*/) {
  return nullptr;  // Next() never answers kTask
}

}  // namespace arenarpc::server
