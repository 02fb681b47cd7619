#pragma once
// This process's resource use: CPU time from getrusage(), the rest from /proc/self (Linux).

#include <cstdint>
#include <optional>
#include <string_view>

namespace arenarpc::stats {

struct ProcessStats {
  uint64_t cpu_user_us = 0, cpu_system_us = 0;  // since the process started
  uint64_t rss_bytes = 0;
  uint64_t fd_count = 0;
  uint64_t thread_count = 0;
  uint64_t cpu_us() const { return cpu_user_us + cpu_system_us; }
};

// num_threads of a /proc/<pid>/stat line; nullopt when malformed. The command name may hold
// spaces and ')', so fields count from the last ')'.
std::optional<uint64_t> ParseStatThreads(std::string_view stat);

// What /proc/self says now; a field it cannot read stays 0.
ProcessStats ReadProcessStats();

}  // namespace arenarpc::stats
