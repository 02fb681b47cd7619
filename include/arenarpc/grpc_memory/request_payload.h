#pragma once
// Fills a call's request from its received gRPC payload through the call's memory strategy.
//
// gRPC's own deserializer calls ParseFromZeroCopyStream; this hands the payload's slices (no copy)
// to MessagePair::ParseRequest instead, so the strategy decides how the request is filled (the
// reuse strategy merges into its kept tree). Compressed messages arrive already inflated (gRPC's
// message_decompress filter).

#include <grpc/impl/codegen/byte_buffer.h>
#include <grpcpp/support/status.h>

namespace arenarpc::memory {
class MessagePair;
}

namespace arenarpc::grpc_memory {

// Parses `buffer` into pair.request() and destroys `buffer` (it takes ownership, like gRPC's own
// deserializer). A null buffer (no payload) or a malformed payload gives INTERNAL, with gRPC's
// texts ("No payload", "Failed to parse <type>[: missing <fields>]").
::grpc::Status ParseRequestPayload(grpc_byte_buffer* buffer, const memory::MessagePair& pair);

}  // namespace arenarpc::grpc_memory
