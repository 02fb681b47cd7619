#include "server/auto_concurrency_limiter.h"

#include <algorithm>
#include <cmath>

namespace arenarpc::server {
AutoConcurrencyLimiter::AutoConcurrencyLimiter(const Options& options)
    : options_(options),
      limit_(std::clamp(options.initial_limit, options.min_limit, options.max_limit)) {}

void AutoConcurrencyLimiter::OnCallEnd(int64_t now_us, int64_t service_us, bool ok) {
  std::lock_guard lock(mutex_);
  if (window_start_us_ == 0) window_start_us_ = now_us;
  if (ok) {
    ++window_calls_;
    window_service_us_ += std::max<int64_t>(service_us, 1);
  }
  const int64_t elapsed = now_us - window_start_us_;
  if (elapsed < options_.window_min_us) return;
  if (window_calls_ < options_.window_min_samples && elapsed < options_.window_max_us) return;
  CloseWindow(now_us);
}

void AutoConcurrencyLimiter::Reset() {
  std::lock_guard lock(mutex_);
  limit_.store(std::clamp(options_.initial_limit, options_.min_limit, options_.max_limit),
               std::memory_order_relaxed);
  window_start_us_ = 0;
  window_calls_ = 0;
  window_service_us_ = 0;
  probing_ = false;
  running_before_probe_ = 0;
  probe_pause_ = 0;
}

void AutoConcurrencyLimiter::CloseWindow(int64_t now_us) {
  const int64_t elapsed = now_us - window_start_us_;
  if (window_calls_ > 0 && elapsed > 0) {
    // Calls running on average: completion rate x mean service time.
    const double running = static_cast<double>(window_service_us_) / static_cast<double>(elapsed);
    const int limit = limit_.load(std::memory_order_relaxed);
    double wanted;
    if (running >= 0.9 * limit && probe_pause_ == 0) {
      wanted = std::max(limit + 1.0, std::ceil(running * (1 + options_.margin)));
      if (!probing_) running_before_probe_ = running;
      probing_ = true;
    } else if (running >= 0.9 * limit) {
      --probe_pause_;
      wanted = limit;
    } else {
      if (probing_ && running < running_before_probe_ * 1.1) {
        probe_pause_ = options_.probe_backoff_windows;  // more room ran nothing more
      }
      probing_ = false;
      // ceil, less a tenth so that measurement noise just above a whole number does not add a
      // waiting call.
      wanted = std::ceil(running - 0.1);
    }
    limit_.store(static_cast<int>(std::clamp(wanted, static_cast<double>(options_.min_limit),
                                             static_cast<double>(options_.max_limit))),
                 std::memory_order_relaxed);
  }
  window_start_us_ = now_us;
  window_calls_ = 0;
  window_service_us_ = 0;
}

}  // namespace arenarpc::server
