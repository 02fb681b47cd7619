#pragma once
// Payload compression as baidu_std numbers it (spec §3.2): 0 none, 1 snappy (one raw snappy block,
// not the framing format), 2 gzip (RFC 1952), 3 zlib (RFC 1950). 4 (lz4) and every other number
// are unsupported, as in brpc. Works chain to chain: no contiguous copy of the input is made.

#include <cstddef>
#include <string>

#include "arenarpc/buffer_chain.h"

namespace arenarpc::protocol {

// Upper bound on what one payload may decompress to (a zlib "bomb" expands ~1000x). Protobuf
// cannot parse more than 2 GiB anyway.
inline constexpr size_t kDefaultMaxDecompressedSize = 512u << 20;

// As brpc prints it in error texts: "none", "snappy", "gzip", "zlib"; "unknown" otherwise.
const char* CompressTypeName(int compress_type) noexcept;
bool IsSupportedCompressType(int compress_type) noexcept;

// Appends the compressed form of all of `in` to *out. On failure (unsupported type) returns false,
// sets *error and leaves *out unchanged.
bool Compress(int compress_type, const net::BufferChain& in, net::BufferChain* out,
              std::string* error);

// Appends the decompressed form of all of `in` to *out. Fails (false, *error set, *out unchanged)
// on an unsupported type, corrupt or truncated data, trailing bytes, or output beyond max_output.
// An empty input decompresses to nothing for every supported type (an empty message).
bool Decompress(int compress_type, const net::BufferChain& in, net::BufferChain* out,
                std::string* error, size_t max_output = kDefaultMaxDecompressedSize);

}  // namespace arenarpc::protocol
