#pragma once
// Opt-in: a unary call's messages go back to their strategy as soon as gRPC has serialized the
// reply, instead of when gRPC releases the holder.
//
// Why: gRPC releases a callback unary call's MessageHolder only after the status has been sent and
// the reactor's OnDone has run on gRPC's executor. Until then the call keeps its request and
// response, so several calls' messages are out at once and a reuse pool keeps that many request
// and response trees (measured in docs/bench-grpc.md §4). Returned at serialization, a pair is
// usually back before the next call takes one.
//
// The contract, and why it is not the default: gRPC keeps the request and response valid until
// OnDone. With this interceptor they are valid only until the handler calls Finish() with an OK
// status (Finish serializes the response, and the interceptor returns both messages to the pool
// right there): the handler must not read or write them after Finish(), nor in OnDone/OnCancel.
// A call finished with an error status sends no message and keeps its messages until gRPC
// releases the holder, as without the interceptor. Calls whose messages do not come from an
// arenarpc allocator (gRPC's default allocation, other methods, sync or async services) are left
// alone. Use it only on servers whose handlers all keep that contract.
//
//   std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
//   creators.push_back(arenarpc::grpc_memory::ReleaseAtSerializeInterceptorFactory());
//   builder.experimental().SetInterceptorCreators(std::move(creators));
//
// HolderStats::released_at_serialize counts the calls released this way.

#include <grpcpp/support/server_interceptor.h>

#include <memory>

namespace arenarpc::grpc_memory {

std::unique_ptr<::grpc::experimental::ServerInterceptorFactoryInterface>
ReleaseAtSerializeInterceptorFactory();

}  // namespace arenarpc::grpc_memory
