#include "grpc_echo/echo_service.h"

#include <atomic>

namespace arenarpc::example {

std::atomic<const void*> grpc_echo_proto_linked{nullptr};

void LinkGrpcEchoProto() {
  grpc_echo_proto_linked.store(&descriptor_table_grpc_5fecho_2fgrpc_5fecho_2eproto,
                               std::memory_order_relaxed);
}

GrpcEchoServiceImpl::GrpcEchoServiceImpl() { LinkGrpcEchoProto(); }

::grpc::ServerUnaryReactor* GrpcEchoServiceImpl::Echo(::grpc::CallbackServerContext* context,
                                                      const EchoRequest* request,
                                                      EchoResponse* response) {
  response->mutable_payload()->CopyFrom(request->payload());
  ::grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(::grpc::Status::OK);
  return reactor;
}

}  // namespace arenarpc::example
