#include "grpc_echo/echo_service.h"

#include "arenarpc/grpc/message_allocator.h"

namespace arenarpc::example {

::grpc::ServerUnaryReactor* GrpcEchoServiceImpl::Echo(::grpc::CallbackServerContext* context,
                                                      const EchoRequest* request,
                                                      EchoResponse* response) {
  response->mutable_payload()->CopyFrom(request->payload());
  arenarpc::grpc::SettleResponse(context);  // before Finish() serializes the response
  ::grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(::grpc::Status::OK);
  return reactor;
}

}  // namespace arenarpc::example
