#pragma once
// StreamUnary: the unary method of grpc_stream_test.proto's StreamService (echoes the text), the
// generated service a GrpcStreamService adds its streaming methods to.

#include "grpc_stream_test.pb.h"

namespace arenarpc::e2e {

class StreamUnary final : public StreamService {
 public:
  void Unary(google::protobuf::RpcController*, const StreamRequest* request,
             StreamReply* response, google::protobuf::Closure* done) override {
    response->set_text(request->text());
    done->Run();
  }
};

}  // namespace arenarpc::e2e
