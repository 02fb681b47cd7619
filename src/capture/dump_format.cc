#include "capture/dump_format.h"

#include <cstring>

namespace arenarpc::capture {

void PutBigEndian32(uint32_t value, char* out) {
  out[0] = static_cast<char>(value >> 24);
  out[1] = static_cast<char>(value >> 16);
  out[2] = static_cast<char>(value >> 8);
  out[3] = static_cast<char>(value);
}

uint32_t GetBigEndian32(const char* in) {
  const auto* p = reinterpret_cast<const unsigned char*>(in);
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

bool AppendRecord(const RpcDumpMeta& meta, std::string_view request, std::string* out) {
  if (!AppendRecordHead(meta, request.size(), out)) return false;
  out->append(request);
  return true;
}

bool AppendRecordHead(const RpcDumpMeta& meta, size_t request_size, std::string* out) {
  const size_t meta_size = meta.ByteSizeLong();
  const size_t body_size = meta_size + request_size;
  if (body_size > kMaxRecordBodyBytes) return false;
  const size_t start = out->size();
  out->resize(start + kRecordHeaderBytes + meta_size);
  char* header = out->data() + start;
  std::memcpy(header, kRecordMagic.data(), kRecordMagic.size());
  PutBigEndian32(static_cast<uint32_t>(body_size), header + 4);
  PutBigEndian32(static_cast<uint32_t>(meta_size), header + 8);
  meta.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(header + kRecordHeaderBytes));
  return true;
}

}  // namespace arenarpc::capture
