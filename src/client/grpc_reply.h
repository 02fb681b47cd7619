#pragma once
// What unary gRPC calls (ClientCall) and gRPC streams (GrpcStreamCall) read out of a response
// alike: the call's outcome as an error code, and one response message parsed into the caller's.

#include <string>

#include "arenarpc/buffer_chain.h"
#include "arenarpc/controller.h"
#include "protocol/h2/grpc_client_session.h"

namespace google::protobuf {
class Message;
}

namespace arenarpc::client {

// 0 when the server finished with grpc-status 0; else the error code (grpc-status mapped as brpc
// maps it, or the local error) and *text.
int GrpcOutcome(protocol::h2::GrpcClientResponse& response, std::string* text);

// Parses one response message (decompressed per its flag and grpc-encoding, at most
// max_decompressed_size) into *out, cleared first. 0 (*compress_type set), or ERESPONSE (an
// unsupported encoding) / EREQUEST (unparsable, as for baidu_std replies) with *text.
int ParseGrpcMessage(bool compressed, const std::string& encoding, const net::BufferChain& message,
                     size_t max_decompressed_size, google::protobuf::Message* out,
                     CompressType* compress_type, std::string* text);

}  // namespace arenarpc::client
