#include "stats/process_stats.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <string>

namespace arenarpc::stats {
namespace {

std::string Slurp(const char* path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

uint64_t CountDirectoryEntries(const char* path) {
  DIR* dir = opendir(path);
  if (dir == nullptr) return 0;
  uint64_t n = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n > 0 ? n - 1 : 0;  // the descriptor opendir() holds on the directory itself
}

}  // namespace

std::optional<uint64_t> ParseStatThreads(std::string_view stat) {
  const size_t paren = stat.rfind(')');
  if (paren == std::string_view::npos) return std::nullopt;
  std::string_view rest = stat.substr(paren + 1);
  // Counting the state field (field 3 of proc(5)) as 0, num_threads (field 20) is 17.
  constexpr int kThreads = 17;
  for (int index = 0;; ++index) {
    const size_t begin = rest.find_first_not_of(" \n");
    if (begin == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(begin);
    const size_t end = std::min(rest.find_first_of(" \n"), rest.size());
    if (index == kThreads) {
      uint64_t threads = 0;
      const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + end, threads);
      if (ec != std::errc() || ptr != rest.data() + end) return std::nullopt;
      return threads;
    }
    rest.remove_prefix(end);
  }
}

ProcessStats ReadProcessStats() {
  ProcessStats out;
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    auto micros = [](const timeval& t) {
      return static_cast<uint64_t>(t.tv_sec) * 1000000 + static_cast<uint64_t>(t.tv_usec);
    };
    out.cpu_user_us = micros(usage.ru_utime);
    out.cpu_system_us = micros(usage.ru_stime);
  }
  if (const auto threads = ParseStatThreads(Slurp("/proc/self/stat"))) out.thread_count = *threads;
  {
    // statm: size resident shared ... (pages)
    std::ifstream statm("/proc/self/statm");
    uint64_t size_pages = 0, resident_pages = 0;
    if (statm >> size_pages >> resident_pages) {
      out.rss_bytes = resident_pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    }
  }
  out.fd_count = CountDirectoryEntries("/proc/self/fd");
  return out;
}

}  // namespace arenarpc::stats
