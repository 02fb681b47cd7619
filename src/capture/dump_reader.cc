#include "capture/dump_reader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace arenarpc::capture {

bool DumpReader::ParseAt(size_t pos, DumpRecord* record, size_t* end, std::string* reason) const {
  const size_t left = bytes_.size() - pos;
  if (left < kRecordHeaderBytes) {
    *reason = "truncated: " + std::to_string(left) + " bytes at the end, a record header is " +
              std::to_string(kRecordHeaderBytes);
    return false;
  }
  const char* header = bytes_.data() + pos;
  if (std::string_view(header, kRecordMagic.size()) != kRecordMagic) {
    *reason = "no record magic \"PRPC\"";
    return false;
  }
  const uint32_t body_size = GetBigEndian32(header + 4);
  const uint32_t meta_size = GetBigEndian32(header + 8);
  if (body_size > kMaxRecordBodyBytes) {
    *reason = "record body of " + std::to_string(body_size) + " bytes is over the " +
              std::to_string(kMaxRecordBodyBytes) + "-byte bound";
    return false;
  }
  if (meta_size > body_size) {
    *reason = "meta_size " + std::to_string(meta_size) + " is larger than body_size " +
              std::to_string(body_size);
    return false;
  }
  if (left - kRecordHeaderBytes < body_size) {
    *reason = "truncated: the record says " + std::to_string(body_size) + " body bytes, " +
              std::to_string(left - kRecordHeaderBytes) + " are left";
    return false;
  }
  const char* meta = header + kRecordHeaderBytes;
  if (!record->meta.ParseFromArray(meta, static_cast<int>(meta_size))) {
    *reason = "the record's RpcDumpMeta does not parse";
    return false;
  }
  record->request.assign(meta + meta_size, body_size - meta_size);
  record->offset = pos;
  *end = pos + kRecordHeaderBytes + body_size;
  return true;
}

bool DumpReader::Next(DumpRecord* record) {
  while (pos_ < bytes_.size()) {
    size_t end = 0;
    std::string reason;
    if (ParseAt(pos_, record, &end, &reason)) {
      pos_ = end;
      return true;
    }
    // Resynchronise: the next magic that starts a whole record.
    DumpDamage damage{pos_, 0, std::move(reason)};
    size_t next = pos_ + 1;
    for (;;) {
      next = bytes_.find(kRecordMagic, next);
      if (next == std::string_view::npos) {
        next = bytes_.size();
        break;
      }
      size_t ignored_end = 0;
      std::string ignored;
      DumpRecord probe;
      if (ParseAt(next, &probe, &ignored_end, &ignored)) break;
      ++next;
    }
    damage.skipped_bytes = next - pos_;
    damages_.push_back(std::move(damage));
    pos_ = next;
  }
  return false;
}

bool ReadDumpFile(const std::string& path, std::string* bytes, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot open dump file " + path;
    return false;
  }
  bytes->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) {
    *error = "cannot read dump file " + path;
    return false;
  }
  return true;
}

bool ListDumpFiles(const std::string& directory, std::vector<std::string>* paths,
                   std::string* error) {
  std::error_code ec;
  std::filesystem::directory_iterator it(directory, ec);
  if (ec) {
    *error = "cannot list dump directory " + directory + ": " + ec.message();
    return false;
  }
  for (const auto& entry : it) {
    if (!entry.is_regular_file(ec)) continue;
    if (!entry.path().filename().string().starts_with("requests.")) continue;
    paths->push_back(entry.path().string());
  }
  std::sort(paths->begin(), paths->end());
  return true;
}

}  // namespace arenarpc::capture
