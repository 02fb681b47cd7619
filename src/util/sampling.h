#pragma once
// OneIn(n): true for about one call in n, at random (a per-thread xorshift): sampling with no
// shared write, and unbiased when several kinds of work alternate on a thread.
#include <cstdint>

namespace arenarpc::util {

inline bool OneIn(uint32_t n) noexcept {
  thread_local uint32_t state = 0x9e3779b9u;
  state ^= state << 13;
  state ^= state >> 17;
  state ^= state << 5;
  return state % n == 0;
}

}  // namespace arenarpc::util
