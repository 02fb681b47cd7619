#pragma once
// The workload's echo handler for gRPC's callback API: the response's payload is a full copy of
// the request's (docs/benchmarks.md), nothing else.

#include "grpc_echo/grpc_echo.grpc.pb.h"

namespace arenarpc::example {

class GrpcEchoServiceImpl final : public GrpcEchoService::CallbackService {
 public:
  ::grpc::ServerUnaryReactor* Echo(::grpc::CallbackServerContext* context,
                                   const EchoRequest* request, EchoResponse* response) override;
};

}  // namespace arenarpc::example
