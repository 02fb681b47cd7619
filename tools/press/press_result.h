#pragma once
// The outcome of one arenarpc_press run, and its plain-text / JSON renderings.

#include <cstdint>
#include <map>
#include <string>

#include "arenarpc/latency_histogram.h"
#include "press/press_options.h"
#include "press/proc_stats.h"
#include "press/server_vars.h"

namespace arenarpc::press {

// Failures detected by press itself (negative, so they never clash with wire or errno codes).
inline constexpr int kEchoMismatch = -1001;    // response payload differs from the request's
inline constexpr int kSkippedInflight = -1002; // open loop: --max_inflight calls already pending
inline constexpr int kResponseMismatch = -1003; // --check_response: not a valid output-type message
inline constexpr int kReplayMismatch = -1004;   // --replay_check: not the first pass's reply
// HTTP+JSON: a non-2xx reply without an x-bd-error-code header is counted as kHttpStatusBase - status.
inline constexpr int kHttpStatusBase = -2000;

struct PressResult {
  PressOptions options;
  double measured_seconds = 0;          // length of the measured window
  uint64_t calls_ok = 0;                // successful calls due inside the window
  uint64_t calls_failed = 0;
  std::map<int, uint64_t> errors_by_code;
  std::map<int, std::string> error_samples;  // first error text seen per code
  double achieved_qps = 0;              // calls_ok / measured_seconds
  LatencyHistogram latency;             // successful calls in the window, µs
  LatencyHistogram failed_latency;      // failed calls in the window (how fast rejections come)
  LatencyHistogram send_lag;            // open loop: actual send time - due time, µs
  double mean_request_bytes = 0;        // serialized request size (ring), 0 if unknown
  ProcessUsage server;                  // valid only with --server_pid
  ProcessUsage client;                  // this process, same window
  bool server_view_read = false;        // --server_vars: /vars was tried (view or note below)
  ServerView server_view;               // the server's own view of the window, from its /vars
  size_t distinct_requests = 0;         // --method: requests in --input (cycled)
  std::map<std::string, uint64_t> server_attempts;  // cluster channels: attempts per server (run)
};

std::string FormatText(const PressResult& result);
std::string FormatJson(const PressResult& result);
// Name of a code for reports: baidu_std names (ETIMEDOUT...), press's own, else "errno N".
std::string ErrorCodeLabel(int code);

}  // namespace arenarpc::press
