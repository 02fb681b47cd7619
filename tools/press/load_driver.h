#pragma once
// LoadDriver: runs one open-loop (fixed QPS) or closed-loop (fixed concurrency) load against a
// Transport, and measures it: warm-up, then a measured window of duration_s whose calls (by due
// time, open loop; by send time, closed loop) go into the result.

#include <atomic>
#include <functional>
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <vector>

#include "press/press_result.h"
#include "press/request_source.h"
#include "press/response_check.h"
#include "press/transport.h"

namespace arenarpc::press {

class LoadDriver {
 public:
  using Clock = std::chrono::steady_clock;

  LoadDriver(const PressOptions& options, Transport& transport, RequestSource& requests);
  // Blocks for warmup_s + duration_s (+ the time the last calls take). `live`, if given, gets a
  // progress line each second. Call once.
  PressResult Run(std::ostream* live);

  // Replaces the default check (ResponseCheck::Echo() with options.verify, else None).
  void SetResponseCheck(ResponseCheck check) { check_ = check; }
  // Called on Run()'s thread when the measured window opens, and after it closed and every call
  // completed (e.g. to read the server's /vars at both ends).
  void SetWindowHooks(std::function<void()> on_start, std::function<void(PressResult&)> on_end) {
    on_window_start_ = std::move(on_start);
    on_window_end_ = std::move(on_end);
  }

 private:
  void RunOpenLoopSender(int thread_index, Clock::time_point start);
  void SendClosedLoop(int slot);
  void Issue(Clock::time_point due, bool from_schedule, int closed_loop_slot);
  void Complete(const PressRequest& request, Clock::time_point due, int closed_loop_slot,
                const CallResult& call);
  void RecordError(int code, std::string_view text, bool measured);
  bool InWindow(Clock::time_point due) const { return due >= window_start_ && due < window_end_; }
  void LiveLoop(std::ostream* live, Clock::time_point start);

  const PressOptions options_;
  Transport& transport_;
  RequestSource& requests_;
  ResponseCheck check_;
  std::function<void()> on_window_start_;
  std::function<void(PressResult&)> on_window_end_;

  Clock::time_point window_start_, window_end_;
  std::atomic<bool> stop_sending_{false};
  std::atomic<int64_t> in_flight_{0};
  std::atomic<uint64_t> completed_total_{0}, failed_total_{0};
  std::atomic<uint64_t> ok_in_window_{0}, failed_in_window_{0};

  std::mutex errors_mu_;
  PressResult result_;
  LatencyHistogram so_far_;  // every call since start (or since warm-up ended), for the live line

  std::mutex resend_mu_;     // closed loop: slots whose completion ran inline, resent by Run()
  std::vector<int> resend_;
};

}  // namespace arenarpc::press
