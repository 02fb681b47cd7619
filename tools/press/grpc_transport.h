#pragma once
// gRPC transport of arenarpc_press: unary calls to arenarpc.example.GrpcEchoService/Echo through
// gRPC's callback API, with the press's pre-serialized RawEchoRequest/RawEchoResponse (wire-identical
// to EchoRequest/EchoResponse), so the client never builds or parses the payload's message tree.
// Registered as protocol "grpc".

#include <memory>

#include <grpcpp/support/status.h>

#include "press/transport.h"

namespace arenarpc::press {

// The full gRPC method name the transport calls.
inline constexpr const char* kGrpcEchoMethod = "/arenarpc.example.GrpcEchoService/Echo";

// gRPC status -> the press's error code (baidu_std codes, error_codes.h); 0 for OK.
int GrpcStatusToErrorCode(::grpc::StatusCode code) noexcept;

std::unique_ptr<Transport> MakeGrpcTransport();

}  // namespace arenarpc::press
