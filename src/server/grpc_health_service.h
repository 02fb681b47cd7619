#pragma once
// grpc.health.v1.Health as a built-in service of every server (docs/grpc.md, "Health"):
//   Watch (server streaming) sends the service's current status, then each change, until the
//   client cancels; when Stop() begins it sends NOT_SERVING and ends the call UNAVAILABLE, so that
//   watchers learn it before the connection goes. A name neither registered nor set is
//   SERVICE_UNKNOWN (and the stream stays open: setting that name later is a change).
//   Check (unary) answers the status; over gRPC it is answered by the protocol itself
//   (GrpcServerProtocol, without a fiber or credentials, like the /health page); this handler
//   serves it over HTTP/1.1 and baidu_std. A Check of an unknown name fails NOT_FOUND on gRPC,
//   EREQUEST here.

#include <google/protobuf/service.h>

#include <memory>

namespace arenarpc::server {

class ServingStatusTable;

std::shared_ptr<google::protobuf::Service> MakeGrpcHealthService(
    std::shared_ptr<ServingStatusTable> table);

}  // namespace arenarpc::server
