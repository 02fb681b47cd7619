#pragma once
// One open connection as observers (pages, stats) see it.

#include <cstdint>
#include <string>
#include <vector>

#include "stats/stream_info.h"

namespace arenarpc::stats {

struct ConnectionInfo {
  uint64_t id = 0;
  std::string remote, local;
  std::string protocol;  // "baidu_std", "http"; "unknown" before its first bytes
  double age_seconds = 0;
  uint64_t bytes_written = 0;
  uint64_t unwritten_held_bytes = 0;  // unsent replies, HTTP replies held for their turn included
  std::vector<StreamInfo> streams;    // its open streams (STRM and gRPC), by id
};

}  // namespace arenarpc::stats
