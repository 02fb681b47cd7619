#include "client/grpc_reply.h"

#include <google/protobuf/message.h>

#include "arenarpc/error_codes.h"
#include "protocol/h2/grpc_wire.h"
#include "protocol/payload_codec.h"
#include "protocol/rpc_meta.pb.h"

namespace arenarpc::client {

int GrpcOutcome(protocol::h2::GrpcClientResponse& response, std::string* text) {
  if (response.error_code != 0) {
    *text = std::move(response.error_text);
    return response.error_code;
  }
  if (response.grpc_status == 0) return 0;
  *text = std::move(response.grpc_message) + " (grpc-status " +
          std::to_string(response.grpc_status) + ")";
  return protocol::h2::ErrorCodeForGrpcStatus(response.grpc_status);
}

int ParseGrpcMessage(bool compressed, const std::string& encoding, const net::BufferChain& message,
                     size_t max_decompressed_size, google::protobuf::Message* out,
                     CompressType* compress_type, std::string* text) {
  protocol::PayloadEncoding payload_encoding;
  if (compressed) {
    if (encoding != "gzip" && encoding != "deflate") {
      *text = "gRPC response compressed with unsupported grpc-encoding \"" + encoding + "\"";
      return ERESPONSE;
    }
    payload_encoding.compress_type = encoding == "gzip" ? 2 : 3;
  }
  out->Clear();  // as for baidu_std: a reused response does not accumulate
  std::string detail;
  if (!protocol::MergePayload(payload_encoding, message, net::BufferChain(), out, &detail,
                              max_decompressed_size)) {
    *text = protocol::ParseFailureText("response", *out, payload_encoding, message.size());
    return EREQUEST;
  }
  *compress_type = static_cast<CompressType>(payload_encoding.compress_type);
  return 0;
}

}  // namespace arenarpc::client
