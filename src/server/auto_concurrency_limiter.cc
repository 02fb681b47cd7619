#include "server/auto_concurrency_limiter.h"

#include <algorithm>
#include <cmath>

namespace arenarpc::server {
namespace {
constexpr double kPeakDecay = 0.1;     // weight of the new rate when it is below the peak
constexpr double kServiceWeight = 0.3;  // weight of a window's service time in the smoothed one
}  // namespace

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

void AutoConcurrencyLimiter::CloseWindow(int64_t now_us) {
  const int64_t elapsed = now_us - window_start_us_;
  if (window_calls_ > 0 && elapsed > 0) {
    const double rate = static_cast<double>(window_calls_) * 1e6 / static_cast<double>(elapsed);
    const double service = static_cast<double>(window_service_us_) / window_calls_;
    peak_rate_ = rate >= peak_rate_ ? rate : peak_rate_ * (1 - kPeakDecay) + rate * kPeakDecay;
    service_us_ = service_us_ == 0 ? service
                                   : service_us_ * (1 - kServiceWeight) + service * kServiceWeight;
    const double wanted = std::ceil(peak_rate_ * service_us_ * 1e-6 * (1 + options_.margin));
    const int limit = static_cast<int>(
        std::clamp(wanted, static_cast<double>(options_.min_limit),
                   static_cast<double>(options_.max_limit)));
    limit_.store(limit, std::memory_order_relaxed);
  }
  window_start_us_ = now_us;
  window_calls_ = 0;
  window_service_us_ = 0;
}

}  // namespace arenarpc::server
