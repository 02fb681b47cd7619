#pragma once
// ErrorCounts: failed calls of one method by error code. brpc's codes (error_codes.h) have a
// counter each and every other code (a handler's own, errno values) shares one, so counting is a
// single relaxed add and the memory is fixed.

#include <array>
#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

namespace arenarpc::stats {

class ErrorCounts {
 public:
  static constexpr int kOtherCode = 0;  // reported code of the shared counter

  void Count(int code) noexcept {
    counts_[SlotOf(code)].fetch_add(1, std::memory_order_relaxed);
  }
  // (code, count) for every code counted at least once, brpc's codes ascending, kOtherCode last.
  std::vector<std::pair<int, uint64_t>> NonZero() const;

 private:
  static constexpr std::array<int, 14> kCodes = {1001, 1002, 1003, 1004, 1008, 1009, 1011,
                                                 1014, 1018, 2001, 2002, 2003, 2004, 2005};
  static size_t SlotOf(int code) noexcept {
    for (size_t i = 0; i < kCodes.size(); ++i) {
      if (kCodes[i] == code) return i;
    }
    return kCodes.size();
  }
  std::array<std::atomic<uint64_t>, kCodes.size() + 1> counts_{};
};

}  // namespace arenarpc::stats
