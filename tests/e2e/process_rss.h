#pragma once
// The test process's resident memory (/proc/self/status), for tests that bound what the server
// in it holds. Sanitizers' shadow memory and quarantine hold memory: such builds do not measure.

#include <cstdint>
#include <fstream>
#include <string>

namespace arenarpc::e2e {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(ARENARPC_SANITIZE_THREAD)
inline constexpr bool kMeasuresRss = false;
#else
inline constexpr bool kMeasuresRss = true;
#endif

inline uint64_t StatusKiB(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return std::stoull(line.substr(prefix.size()));
  }
  return 0;
}
inline uint64_t RssBytes() { return StatusKiB("VmRSS") << 10; }
inline uint64_t PeakRssBytes() { return StatusKiB("VmHWM") << 10; }
inline void ResetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace arenarpc::e2e
