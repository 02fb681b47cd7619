#pragma once
// StreamUnary: the unary method of grpc_stream_test.proto's StreamService (echoes the text), the
// generated service a GrpcStreamService adds its streaming methods to.

#include <string>

#include "arenarpc/grpc_stream.h"
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

// StreamService.ServerStream for the real clients' tests: `count` replies {text, index, `bytes`
// of payload}, then (fail_code != 0) the trailer x-trailer: t and SetFailed(fail_code, text).
inline void CountingServerStream(GrpcServerStream& stream) {
  GrpcStreamMessages in;
  if (!stream.Read(&in)) return;
  const auto& request = in.request<StreamRequest>();
  for (int i = 0; i < request.count(); ++i) {
    GrpcStreamMessages out = stream.NewMessages();
    out.response<StreamReply>().set_text(request.text());
    out.response<StreamReply>().set_index(i);
    if (request.bytes() > 0) out.response<StreamReply>().set_payload(std::string(request.bytes(), 'p'));
    if (!stream.Write(std::move(out))) return;
  }
  if (request.fail_code() != 0) {
    stream.AddTrailingMetadata("x-trailer", "t");
    stream.controller().SetFailed(request.fail_code(), request.text());
  }
}

}  // namespace arenarpc::e2e
