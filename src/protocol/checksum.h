#pragma once
// Payload checksums (spec §3.4): checksum_type 1 = CRC-32C of the payload as on the wire (after
// compression), continued over the attachment when checksum_with_attachment is set; the value is
// the 4-byte big-endian masked CRC. Unknown checksum types are not verified, as in brpc.

#include <string>

#include "arenarpc/buffer_chain.h"
#include "protocol/payload_encoding.h"
#include "protocol/rpc_meta.pb.h"

namespace arenarpc::protocol {

// "none", "crc32c"; "unknown" otherwise (brpc's wording in error texts).
const char* ChecksumTypeName(int checksum_type) noexcept;

// checksum_value bytes for CRC-32C over payload (and attachment, if given).
std::string Crc32cChecksumValue(const net::BufferChain& payload,
                                const net::BufferChain* attachment = nullptr);

// Sets checksum_type/checksum_value (and checksum_with_attachment when with_attachment) in *meta
// for the given payload. checksum_type 0 writes type 0 and an empty value, as brpc >= 1.14 does.
// Returns false (with *error) for a type this side cannot produce.
bool SetChecksum(int checksum_type, bool with_attachment, const net::BufferChain& payload,
                 const net::BufferChain& attachment, RpcMeta* meta, std::string* error);

// Verifies the encoding's checksum, if it names one we know. false + *error on mismatch or on a
// CRC-32C value that is not exactly 4 bytes.
bool VerifyChecksum(const PayloadEncoding& encoding, const net::BufferChain& payload,
                    const net::BufferChain& attachment, std::string* error);

}  // namespace arenarpc::protocol
