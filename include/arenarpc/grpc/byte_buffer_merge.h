#pragma once
// Merges a received gRPC payload into a message without Clear()ing it first.
//
// gRPC's protobuf deserializer calls ParseFromZeroCopyStream, whose Clear() deletes a proto3
// message's singular sub-messages; a message that a strategy handed out already empty (the reuse
// strategy's cleared-in-place tree) must be filled with MergeFrom instead, as the arenarpc runtime
// does. Compressed messages arrive already inflated (gRPC's message_decompress filter).

#include <grpc/impl/codegen/byte_buffer.h>
#include <grpcpp/support/status.h>

namespace google::protobuf {
class MessageLite;
}

namespace arenarpc::memory {
class MessagePair;
}

namespace arenarpc::grpc {

// Merges `buffer` into `message` and destroys `buffer` (it takes ownership, like gRPC's own
// deserializer). A null buffer (no payload) or a malformed payload gives INTERNAL, as in gRPC.
// When `shape` is given and its strategy shapes requests (reuse), the bytes are first shown to
// shape->ShapeRequest() (see memory::MessagePair), so the merge reuses a fitted kept tree.
::grpc::Status MergeFromByteBuffer(grpc_byte_buffer* buffer, google::protobuf::MessageLite& message,
                                   const memory::MessagePair* shape = nullptr);

}  // namespace arenarpc::grpc
