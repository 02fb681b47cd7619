#include "echo/echo_service.h"

namespace arenarpc::example {

void EchoServiceImpl::Echo(google::protobuf::RpcController* /*controller*/,
                           const EchoRequest* request, EchoResponse* response,
                           google::protobuf::Closure* done) {
  // The copy lands wherever the response lives (heap, arena, pages, or a reused tree): this deep
  // copy of ~11,700 strings is the allocation-bound work the memory modes are compared on.
  if (!from_scratch_) {
    response->mutable_payload()->CopyFrom(request->payload());
    done->Run();
    return;
  }
  ComplexPayload* out = response->mutable_payload();
  for (const Result& result : request->payload().result()) {
    Result* out_result = out->add_result();
    for (const Item& item : result.item()) {
      Item* out_item = out_result->add_item();
      for (const std::string& term : item.term()) out_item->add_term(term);
    }
    for (const std::string& term : result.term()) out_result->add_term(term);
  }
  done->Run();
}

void OptionalEchoServiceImpl::Echo(google::protobuf::RpcController* /*controller*/,
                                   const OptionalEchoRequest* request,
                                   OptionalEchoResponse* response,
                                   google::protobuf::Closure* done) {
  if (request->has_payload()) response->mutable_payload()->CopyFrom(request->payload());
  done->Run();
}

}  // namespace arenarpc::example
