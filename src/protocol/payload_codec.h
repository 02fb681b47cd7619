#pragma once
// Request/response payloads (spec §3): message <-> wire bytes in BufferChains.
//   sender:   serialize -> compress -> (checksum, see checksum.h) -> frame
//   receiver: verify checksum -> decompress -> bytes to parse (the server hands them to the
//             call's MessagePair::ParseRequest; MergePayload merges them into a message)
// Uncompressed payloads are parsed straight from the receive blocks.

#include <google/protobuf/message.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "arenarpc/buffer_chain.h"
#include "protocol/compression.h"
#include "protocol/payload_bytes.h"
#include "protocol/payload_encoding.h"

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

// Checks the payload `encoding` describes (content_type, checksum, size) and inflates it when
// compressed; on success *bytes holds what to parse (the receive blocks themselves when the payload
// is not compressed: `payload` must then outlive *bytes). `attachment` is only read for a checksum
// that covers it. On failure returns false with a short reason in *detail (for logs); the caller
// answers with ParseFailureText().
bool OpenPayload(const PayloadEncoding& encoding, const net::BufferChain& payload,
                 const net::BufferChain& attachment, PayloadBytes* bytes, std::string* detail,
                 size_t max_decompressed = kDefaultMaxDecompressedSize);

// The reason (for logs) that bytes did not parse into `message`: invalid bytes or missing fields.
std::string ParseFailureDetail(const google::protobuf::Message& message,
                               memory::ParseResult result);

// OpenPayload + a merge into *message (e.g. a client's response). On failure *message may hold
// part of the payload: do not use it.
bool MergePayload(const PayloadEncoding& encoding, const net::BufferChain& payload,
                  const net::BufferChain& attachment, google::protobuf::Message* message,
                  std::string* detail, size_t max_decompressed = kDefaultMaxDecompressedSize);

// brpc's text for a payload that cannot be parsed (spec §5.3), without the "[E1003]" part:
// "Fail to parse request=example.EchoRequest, ContentType=pb, CompressType=none,
//  ChecksumType=none, request_size=4". `what` is "request" or "response"; `size` is the payload +
// attachment byte count.
std::string ParseFailureText(std::string_view what, const google::protobuf::Message& message,
                             const PayloadEncoding& encoding, size_t size);

}  // namespace arenarpc::protocol
