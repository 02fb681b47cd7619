#pragma once
// Open-loop schedule: call n (0, 1, 2, ...) is due at start + n / qps, whatever happened to the
// calls before it. Latency is measured from this due time, not from when the call actually left,
// so a stalled server (or a late sender) shows up in the percentiles instead of silently
// delaying the next sends ("coordinated omission").
// With T sender threads, thread k sends calls k, k+T, k+2T, ...: together they keep the schedule.

#include <chrono>
#include <cstdint>

namespace arenarpc::press {

class OpenLoopSchedule {
 public:
  using Clock = std::chrono::steady_clock;

  OpenLoopSchedule(Clock::time_point start, double qps) : start_(start), qps_(qps) {}

  Clock::time_point DueTime(uint64_t n) const {
    return start_ + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(static_cast<double>(n) / qps_));
  }
  // Number of calls due strictly before `t` (calls 0 .. CallsBefore(t)-1).
  uint64_t CallsBefore(Clock::time_point t) const {
    if (t <= start_) return 0;
    const double n = std::chrono::duration<double>(t - start_).count() * qps_;
    auto count = static_cast<uint64_t>(n);
    while (count > 0 && DueTime(count - 1) >= t) --count;  // guard rounding at the boundary
    while (DueTime(count) < t) ++count;
    return count;
  }
  // Latency of a call due at `due` that completed at `done`, in µs (never negative).
  static int64_t LatencyUs(Clock::time_point due, Clock::time_point done) {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(done - due).count();
    return us < 0 ? 0 : us;
  }
  Clock::time_point start() const { return start_; }
  double qps() const { return qps_; }

 private:
  Clock::time_point start_;
  double qps_;
};

}  // namespace arenarpc::press
