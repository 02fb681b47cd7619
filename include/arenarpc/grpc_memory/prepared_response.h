#pragma once
// PreparedResponse: what gRPC serializes for a method served through ServiceMemory::Serve().
//
// gRPC serializes a callback unary reply inside Finish(), through SerializationTraits (gRPC's
// public hook for message types). The handler table holds CallbackUnaryHandler<Request,
// PreparedResponse<Response>>: the handler itself still gets a plain Response*, and the traits
// below call MessagePair::PrepareResponse() right before serializing, so the strategy, not the
// handler, makes the bytes equal heap's.
//
// Interceptors see this type behind GetSendMessage() for such methods (not a Response).

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

#include "arenarpc/memory/message_memory.h"

namespace arenarpc::grpc_memory {

template <class Response>
class PreparedResponse {
 public:
  PreparedResponse() = default;  // gRPC's DefaultMessageHolder needs one; never serialized
  explicit PreparedResponse(const memory::MessagePair* pair) noexcept : pair_(pair) {}

  Response* message() const noexcept { return static_cast<Response*>(pair_->response()); }
  // Prepares the response for serialization (MessagePair::PrepareResponse) and returns it.
  const Response& Prepare() const noexcept {
    pair_->PrepareResponse();
    return *message();
  }

 private:
  const memory::MessagePair* pair_ = nullptr;
};

}  // namespace arenarpc::grpc_memory

template <class Response>
class grpc::SerializationTraits<arenarpc::grpc_memory::PreparedResponse<Response>, void> {
 public:
  static Status Serialize(const arenarpc::grpc_memory::PreparedResponse<Response>& response,
                          ByteBuffer* buffer, bool* own_buffer) {
    return SerializationTraits<Response>::Serialize(response.Prepare(), buffer, own_buffer);
  }
};
