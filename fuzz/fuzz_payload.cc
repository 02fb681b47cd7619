// Fuzzes payload decompression (snappy/gzip/zlib, unknown types), checksum verification and
// merge-parsing, over chains split into arbitrary pieces.
// Input: byte 0 = compress_type (0..5: 4 and 5 are unsupported), byte 1 = flags
// (bit 0: CRC-32C expected, bit 1: give the right checksum value, bits 2..7: piece size),
// the rest = the payload as on the wire.
#include <algorithm>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "protocol/checksum.h"
#include "protocol/compression.h"
#include "protocol/payload_codec.h"

namespace {
using arenarpc::net::BufferChain;
using namespace arenarpc::protocol;
constexpr size_t kMaxOutput = 4 << 20;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int compress_type = data[0] % 6;
  const uint8_t flags = data[1];
  const size_t piece = (flags >> 2) + 1;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 2), size - 2);
  BufferChain payload;
  for (size_t pos = 0; pos < bytes.size(); pos += piece) payload.Append(bytes.substr(pos, piece));

  // Decompression: fails cleanly, or yields bytes that round-trip through our own compressor.
  BufferChain plain;
  std::string error;
  if (Decompress(compress_type, payload, &plain, &error, kMaxOutput)) {
    FUZZ_CHECK(IsSupportedCompressType(compress_type));
    FUZZ_CHECK(plain.size() <= kMaxOutput);
    BufferChain again, back;
    FUZZ_CHECK(Compress(compress_type, plain, &again, &error));
    FUZZ_CHECK(Decompress(compress_type, again, &back, &error, kMaxOutput));
    FUZZ_CHECK(back.ToString() == plain.ToString());
  } else {
    FUZZ_CHECK(!error.empty());
    FUZZ_CHECK(plain.empty());
  }

  // The receiver's whole path: checksum, decompression, MergeFrom + IsInitialized.
  RpcMeta meta;
  meta.set_compress_type(compress_type);
  if (flags & 1) {
    meta.set_checksum_type(CHECKSUM_TYPE_CRC32C);
    meta.set_checksum_value((flags & 2) ? Crc32cChecksumValue(payload)
                                        : std::string("\0\0\0\0", 4));
  }
  RpcMeta message;
  std::string detail;
  const bool parsed = MergePayload(PayloadEncoding::Of(meta), payload, BufferChain(), &message,
                                   &detail, kMaxOutput);
  FUZZ_CHECK(parsed || !detail.empty());
  if (parsed) {
    FUZZ_CHECK(message.IsInitialized());
    // What parsed serializes and parses back the same way.
    BufferChain out;
    FUZZ_CHECK(SerializePayload(message, compress_type, &out, &error));
    RpcMeta plain_meta;
    plain_meta.set_compress_type(compress_type);
    RpcMeta reparsed;
    FUZZ_CHECK(MergePayload(PayloadEncoding::Of(plain_meta), out, BufferChain(), &reparsed, &detail,
                            kMaxOutput));
    FUZZ_CHECK(reparsed.ByteSizeLong() == message.ByteSizeLong());
  }
  return 0;
}
