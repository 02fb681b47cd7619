#pragma once
// The benchmark's echo handler (docs/benchmarks.md): the response's payload is a full copy of the
// request's payload (CopyFrom), nothing else. Shared by echo_server and the tests.

#include "echo/echo.pb.h"

namespace arenarpc::example {

class EchoServiceImpl final : public EchoService {
 public:
  void Echo(google::protobuf::RpcController* controller, const EchoRequest* request,
            EchoResponse* response, google::protobuf::Closure* done) override;
};

}  // namespace arenarpc::example
