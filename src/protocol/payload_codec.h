#pragma once
// Request/response payloads (spec §3): message <-> wire bytes in BufferChains.
//   sender:   serialize -> compress -> (checksum, see checksum.h) -> frame
//   receiver: verify checksum -> decompress -> MergeFrom + IsInitialized
// Parsing merges into the given message (never Parse*, which Clear()s and would throw away the
// reuse strategy's kept sub-message tree); uncompressed payloads are parsed straight from the
// receive blocks.

#include <google/protobuf/message.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "arenarpc/buffer_chain.h"
#include "arenarpc/memory/message_memory.h"
#include "protocol/compression.h"
#include "protocol/rpc_meta.pb.h"

namespace arenarpc::protocol {

// "pb", "json", "proto-json", "proto-text"; "unknown" otherwise (brpc's wording).
const char* ContentTypeName(int content_type) noexcept;

// Serializes `message` (compressed with compress_type) and appends it to *out. `what` names the
// message in errors ("request" / "response"). Fails — false, *error set, *out unchanged — when
// required fields are missing ("Missing required fields in response: message", spec §5.3), the
// message is larger than protobuf can serialize, or compress_type is unsupported.
bool SerializePayload(const google::protobuf::Message& message, int compress_type,
                      net::BufferChain* out, std::string* error,
                      std::string_view what = "response");

// Merges the payload described by `meta` (content_type, compress_type, checksum) into *message.
// `attachment` is only read for a checksum that covers it. On failure returns false with a short
// reason in *detail (for logs); the caller answers with ParseFailureText(). *message may then hold
// part of the payload: release it, do not use it. When `shape` is given and its strategy shapes
// requests (reuse), the (decompressed) bytes are first shown to shape->ShapeRequest() so that the
// kept tree of *message (shape->request()) fits them.
bool MergePayload(const RpcMeta& meta, const net::BufferChain& payload,
                  const net::BufferChain& attachment, google::protobuf::Message* message,
                  std::string* detail, size_t max_decompressed = kDefaultMaxDecompressedSize,
                  const memory::MessagePair* shape = nullptr);

// brpc's text for a payload that cannot be parsed (spec §5.3), without the "[E1003]" part:
// "Fail to parse request=example.EchoRequest, ContentType=pb, CompressType=none,
//  ChecksumType=none, request_size=4". `what` is "request" or "response"; `size` is the payload +
// attachment byte count.
std::string ParseFailureText(std::string_view what, const google::protobuf::Message& message,
                             const RpcMeta& meta, size_t size);

}  // namespace arenarpc::protocol
