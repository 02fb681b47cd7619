#include "util/rate_limited_log.h"

#include <cstdio>

namespace arenarpc::util {

void RateLimitedLog::Log(std::string_view line) {
  const auto now = std::chrono::steady_clock::now();
  uint64_t suppressed_before = 0;
  {
    std::lock_guard lock(mutex_);
    if (now - window_start_ >= std::chrono::seconds(1)) {
      suppressed_before = suppressed_in_window_;
      window_start_ = now;
      in_window_ = 0;
      suppressed_in_window_ = 0;
    }
    if (in_window_ >= per_second_) {
      ++suppressed_in_window_;
      ++suppressed_total_;
      return;
    }
    ++in_window_;
  }
  if (suppressed_before != 0) {
    std::fprintf(stderr, "arenarpc: (%llu similar lines suppressed)\n",
                 static_cast<unsigned long long>(suppressed_before));
  }
  std::fprintf(stderr, "arenarpc: %.*s\n", static_cast<int>(line.size()), line.data());
}

uint64_t RateLimitedLog::suppressed_total() const {
  std::lock_guard lock(mutex_);
  return suppressed_total_;
}

}  // namespace arenarpc::util
