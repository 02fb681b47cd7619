#pragma once
// The workload's echo handler for gRPC's callback API: the response's payload is a full copy of
// the request's (docs/benchmarks.md), nothing else.

#include "grpc_echo/grpc_echo.grpc.pb.h"

namespace arenarpc::example {

// grpc_echo.proto declares only the service (its messages are echo_payload.proto's), so nothing
// links its generated grpc_echo.pb.cc in unless something refers to it; this does. Its
// descriptors are where ServiceMemory::Serve() finds "arenarpc.example.GrpcEchoService.Echo".
void LinkGrpcEchoProto();

class GrpcEchoServiceImpl final : public GrpcEchoService::CallbackService {
 public:
  GrpcEchoServiceImpl();
  ::grpc::ServerUnaryReactor* Echo(::grpc::CallbackServerContext* context,
                                   const EchoRequest* request, EchoResponse* response) override;
};

}  // namespace arenarpc::example
