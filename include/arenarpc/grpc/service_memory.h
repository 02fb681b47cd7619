#pragma once
// Deprecated spelling, kept for one release: the gRPC C++ memory adapter is
// arenarpc/grpc_memory/service_memory.h, namespace arenarpc::grpc_memory (a namespace
// named `grpc` inside arenarpc hid ::grpc from code in namespace arenarpc).
#include "arenarpc/grpc_memory/service_memory.h"

namespace arenarpc {
namespace grpc = grpc_memory;
}  // namespace arenarpc
