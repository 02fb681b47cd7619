#pragma once
// The test process's resident memory (/proc/self/statm), for the release tests.
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace arenarpc::memory {

inline uint64_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int read = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return read == 2 ? resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace arenarpc::memory
