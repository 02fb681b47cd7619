#pragma once
// DumpReader: the records of one dump file's bytes, in order. A damaged stretch (a bad magic,
// sizes that do not add up, a meta that does not parse, a record cut short by the end of the
// file) is reported with its offset and skipped: reading resumes at the next "PRPC" that starts a
// whole record, so one bad record costs only itself.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "capture/dump_format.h"

namespace arenarpc::capture {

struct DumpDamage {
  uint64_t offset = 0;         // where the damaged stretch starts
  uint64_t skipped_bytes = 0;  // bytes skipped to the next record (or to the end)
  std::string reason;
};

class DumpReader {
 public:
  // `bytes` must outlive the reader.
  explicit DumpReader(std::string_view bytes) : bytes_(bytes) {}

  // The next whole record; false at the end of the bytes.
  bool Next(DumpRecord* record);
  // The damaged stretches skipped so far, in order.
  const std::vector<DumpDamage>& damages() const { return damages_; }

 private:
  // A whole record at pos_: true and *record filled, else false and *reason says why.
  bool ParseAt(size_t pos, DumpRecord* record, size_t* end, std::string* reason) const;

  std::string_view bytes_;
  size_t pos_ = 0;
  std::vector<DumpDamage> damages_;
};

// A dump file's bytes (read whole: a replay holds its records anyway). false: *error says why.
bool ReadDumpFile(const std::string& path, std::string* bytes, std::string* error);

// The dump files of a directory ("requests.*", as brpc names them), sorted by name, i.e. by the
// time they were opened. false: *error says why (not a directory, unreadable).
bool ListDumpFiles(const std::string& directory, std::vector<std::string>* paths,
                   std::string* error);

}  // namespace arenarpc::capture
