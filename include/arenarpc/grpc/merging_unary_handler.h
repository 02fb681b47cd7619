#pragma once
// Deprecated spelling, kept for one release: the gRPC C++ memory adapter is
// arenarpc/grpc_memory/merging_unary_handler.h, namespace arenarpc::grpc_memory (a namespace
// named `grpc` inside arenarpc hid ::grpc from code in namespace arenarpc).
#include "arenarpc/grpc_memory/merging_unary_handler.h"

namespace arenarpc {
namespace grpc = grpc_memory;
}  // namespace arenarpc
