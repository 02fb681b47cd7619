#pragma once
// The dump file format (docs/capture.md, "File format"): records back to back, each
//   "PRPC" | body_size (u32, big-endian) | meta_size (u32, big-endian) | meta | request
// with body_size = meta_size + the request's size and meta a serialized RpcDumpMeta
// (rpc_dump.proto). This is brpc's rpc_dump file layout (baidu_std's 12-byte frame header around
// an RpcDumpMeta), so brpc's rpc_replay and arenarpc_press --replay read each other's dumps.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "capture/rpc_dump.pb.h"

namespace arenarpc::capture {

inline constexpr std::string_view kRecordMagic = "PRPC";
inline constexpr size_t kRecordHeaderBytes = 12;
// A record whose body says more than this is taken for damage (brpc's default max_body_size).
inline constexpr size_t kMaxRecordBodyBytes = 64u << 20;

// One record as read back. `offset`: where its header starts in its file.
struct DumpRecord {
  RpcDumpMeta meta;
  std::string request;
  uint64_t offset = 0;
};

// Appends the record of `meta` and `request` to *out. false (nothing appended) when the record
// would not fit the format's 32-bit sizes or kMaxRecordBodyBytes.
bool AppendRecord(const RpcDumpMeta& meta, std::string_view request, std::string* out);
// The record's header and meta alone, for a request of `request_size` bytes the caller appends
// next. false (nothing appended) as AppendRecord.
bool AppendRecordHead(const RpcDumpMeta& meta, size_t request_size, std::string* out);

// The header's two sizes, big-endian, after the magic.
void PutBigEndian32(uint32_t value, char* out);
uint32_t GetBigEndian32(const char* in);

}  // namespace arenarpc::capture
