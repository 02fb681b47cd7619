#include "press/press_result.h"

#include <cmath>
#include <cstring>
#include <iomanip>
#include <sstream>

#include "arenarpc/error_codes.h"
#include "util/json_string.h"

namespace arenarpc::press {
namespace {

constexpr std::pair<const char*, double> kPercentiles[] = {
    {"p50", 50}, {"p80", 80}, {"p90", 90}, {"p99", 99}, {"p99.9", 99.9}};

using util::JsonEscape;

std::string Mode(const PressOptions& o) {
  std::ostringstream s;
  if (o.qps > 0) {
    s << "open-loop qps=" << o.qps;
  } else {
    s << "closed-loop concurrency=" << o.concurrency;
  }
  return s.str();
}

void UsageJson(std::ostringstream& j, const ProcessUsage& u, uint64_t calls) {
  j << "{\"valid\":" << (u.valid ? "true" : "false") << ",\"cpu_cores\":" << u.cores
    << ",\"cpu_seconds\":" << u.cpu_seconds << ",\"cpu_us_per_call\":"
    << (calls ? u.cpu_seconds * 1e6 / double(calls) : 0) << ",\"wall_seconds\":" << u.wall_seconds
    << ",\"rss_start_bytes\":" << u.rss_start << ",\"rss_peak_bytes\":" << u.rss_peak
    << ",\"rss_end_bytes\":" << u.rss_end << ",\"rss_samples\":" << u.rss_samples << "}";
}

std::string Number(double v) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(std::isfinite(v) && v == std::trunc(v) ? 0 : 1) << v;
  return s.str();
}

void ServerViewText(std::ostringstream& s, const ServerView& v) {
  if (!v.valid) {
    s << "server /vars: skipped (" << v.note << ")\n";
    return;
  }
  s << "server /vars (" << v.method_prefix << "*): " << Number(v.calls) << " calls, "
    << Number(v.errors) << " errors";
  if (v.mean_latency_us) s << ", mean latency " << Number(*v.mean_latency_us) << " us";
  if (v.latency_p99_us) s << ", p99 (last 10 s) " << Number(*v.latency_p99_us) << " us";
  if (v.cpu_us_per_call) s << ", cpu " << Number(*v.cpu_us_per_call) << " us/call";
  if (v.rss_bytes) s << ", rss " << Number(*v.rss_bytes / 1e6) << " MB";
  s << "\n";
  if (!v.memory_deltas.empty()) {
    s << "  memory over the window:";
    for (const auto& [name, value] : v.memory_deltas) s << " " << name << "=" << Number(value);
    s << "\n";
  }
  if (!v.memory_gauges.empty()) {
    s << "  memory at the end:";
    for (const auto& [name, value] : v.memory_gauges) s << " " << name << "=" << Number(value);
    s << "\n";
  }
}

void ServerViewJson(std::ostringstream& j, const ServerView& v) {
  j << "{\"valid\":" << (v.valid ? "true" : "false");
  if (!v.valid) {
    j << ",\"note\":\"" << JsonEscape(v.note) << "\"}";
    return;
  }
  j << ",\"calls\":" << Number(v.calls) << ",\"errors\":" << Number(v.errors);
  auto optional = [&](const char* key, const std::optional<double>& value) {
    if (value) j << ",\"" << key << "\":" << Number(*value);
  };
  optional("mean_latency_us", v.mean_latency_us);
  optional("latency_p99_us", v.latency_p99_us);
  optional("cpu_us", v.cpu_us);
  optional("cpu_us_per_call", v.cpu_us_per_call);
  optional("rss_bytes", v.rss_bytes);
  for (const auto& [key, fields] : {std::pair{"memory_deltas", &v.memory_deltas},
                                    std::pair{"memory_gauges", &v.memory_gauges}}) {
    j << ",\"" << key << "\":{";
    bool first = true;
    for (const auto& [name, value] : *fields) {
      j << (first ? "" : ",") << "\"" << JsonEscape(name) << "\":" << Number(value);
      first = false;
    }
    j << "}";
  }
  j << "}";
}

}  // namespace

std::string ErrorCodeLabel(int code) {
  if (code == kEchoMismatch) return "ECHO_MISMATCH";
  if (code == kSkippedInflight) return "SKIPPED_MAX_INFLIGHT";
  if (code == kResponseMismatch) return "RESPONSE_MISMATCH";
  if (code == kReplayMismatch) return "REPLAY_MISMATCH";
  if (code < kHttpStatusBase && code > kHttpStatusBase - 1000) {
    return "HTTP " + std::to_string(kHttpStatusBase - code);
  }
  if (const char* name = ErrorCodeName(code); name[0] != '\0') return name;
  if (code > 0 && code < 1000) {
    const char* text = std::strerror(code);
    return "errno " + std::to_string(code) + " (" + text + ")";
  }
  return "code " + std::to_string(code);
}

std::string FormatText(const PressResult& r) {
  const PressOptions& o = r.options;
  std::ostringstream s;
  s << std::fixed;
  s << "arenarpc_press " << o.protocol << " " << o.server << " " << Mode(o);
  if (o.method.empty()) {
    s << (o.payload_mix.empty() ? " payload_scale=" + std::to_string(o.payload_scale)
                                : " payload_mix=" + o.payload_mix)
      << " requests="
      << (o.ring > 0 ? "ring of " + std::to_string(o.ring) + " pre-generated" : "drawn per call");
  }
  s << " warmup=" << std::setprecision(1) << o.warmup_s << "s duration=" << o.duration_s
    << "s connections=" << o.connections << " threads=" << o.threads
    << " connection_type=" << o.connection_type << " timeout=" << o.timeout_ms << "ms\n";
  if (!o.method.empty()) {
    s << "method: " << o.method << " from " << o.proto << ", " << r.distinct_requests
      << " request(s) from " << o.input << " cycled"
      << (o.check_response ? ", responses checked against the output type" : "") << "\n";
  }
  if (r.mean_request_bytes > 0) {
    s << "request size: " << std::setprecision(0) << r.mean_request_bytes << " bytes (mean)\n";
  }
  s << "calls: " << r.calls_ok << " ok, " << r.calls_failed << " failed; achieved QPS "
    << std::setprecision(1) << r.achieved_qps << "\n";
  for (const auto& [code, count] : r.errors_by_code) {
    auto sample = r.error_samples.find(code);
    s << "  error " << code << " " << ErrorCodeLabel(code) << ": " << count;
    if (sample != r.error_samples.end() && !sample->second.empty()) {
      s << "  (e.g. \"" << sample->second << "\")";
    }
    s << "\n";
  }
  s << "latency us:";
  for (const auto& [name, p] : kPercentiles) s << " " << name << "=" << r.latency.Percentile(p);
  s << " max=" << r.latency.Max() << " mean=" << std::setprecision(0) << r.latency.Mean() << "\n";
  if (r.failed_latency.Count() > 0) {
    s << "failed calls' latency us: p50=" << r.failed_latency.Percentile(50)
      << " p99=" << r.failed_latency.Percentile(99) << " max=" << r.failed_latency.Max() << "\n";
  }
  if (o.qps > 0) {
    s << "send lag us (actual send - scheduled): p50=" << r.send_lag.Percentile(50)
      << " p99=" << r.send_lag.Percentile(99) << " max=" << r.send_lag.Max() << "\n";
  }
  const uint64_t calls = r.calls_ok + r.calls_failed;
  if (o.server_pid > 0) {
    if (r.server.valid) {
      s << "server pid " << o.server_pid << ": cpu " << std::setprecision(3) << r.server.cores
        << " cores (" << std::setprecision(0)
        << (calls ? r.server.cpu_seconds * 1e6 / double(calls) : 0) << " us/call), rss peak "
        << std::setprecision(1) << r.server.rss_peak / 1e6 << " MB, end "
        << r.server.rss_end / 1e6 << " MB (" << r.server.rss_samples << " samples)\n";
    } else {
      s << "server pid " << o.server_pid << ": not measurable (process missing or exited)\n";
    }
  }
  if (r.server_view_read) ServerViewText(s, r.server_view);
  if (r.client.valid) {
    s << "press itself: cpu " << std::setprecision(3) << r.client.cores << " cores ("
      << std::setprecision(1) << (calls ? r.client.cpu_seconds * 1e6 / double(calls) : 0)
      << " us/call), rss " << r.client.rss_peak / 1e6 << " MB\n";
  }
  uint64_t attempts = 0;
  for (const auto& [server, n] : r.server_attempts) attempts += n;
  for (const auto& [server, n] : r.server_attempts) {
    s << "server " << server << ": " << n << " attempts (" << std::setprecision(1)
      << 100.0 * double(n) / double(attempts ? attempts : 1) << "%, whole run)\n";
  }
  return s.str();
}

std::string FormatJson(const PressResult& r) {
  const PressOptions& o = r.options;
  std::ostringstream j;
  j.precision(6);
  j << "{\"protocol\":\"" << JsonEscape(o.protocol) << "\",\"server\":\"" << JsonEscape(o.server)
    << "\",\"mode\":\"" << (o.qps > 0 ? "open_loop" : "closed_loop") << "\",\"target_qps\":"
    << o.qps << ",\"concurrency\":" << o.concurrency << ",\"payload_scale\":" << o.payload_scale
    << ",\"payload_mix\":\"" << JsonEscape(o.payload_mix) << "\""
    << ",\"ring\":" << o.ring << ",\"warmup_s\":" << o.warmup_s << ",\"duration_s\":"
    << o.duration_s << ",\"connections\":" << o.connections << ",\"threads\":" << o.threads
    << ",\"connection_type\":\"" << JsonEscape(o.connection_type) << "\",\"timeout_ms\":"
    << o.timeout_ms << ",\"mean_request_bytes\":" << r.mean_request_bytes
    << ",\"measured_seconds\":" << r.measured_seconds << ",\"calls_ok\":" << r.calls_ok
    << ",\"calls_failed\":" << r.calls_failed << ",\"achieved_qps\":" << r.achieved_qps
    << ",\"errors\":[";
  bool first = true;
  for (const auto& [code, count] : r.errors_by_code) {
    auto sample = r.error_samples.find(code);
    j << (first ? "" : ",") << "{\"code\":" << code << ",\"name\":\""
      << JsonEscape(ErrorCodeLabel(code)) << "\",\"count\":" << count << ",\"sample\":\""
      << JsonEscape(sample == r.error_samples.end() ? "" : sample->second) << "\"}";
    first = false;
  }
  j << "],\"latency_us\":{";
  for (const auto& [name, p] : kPercentiles) j << "\"" << name << "\":" << r.latency.Percentile(p) << ",";
  j << "\"max\":" << r.latency.Max() << ",\"mean\":" << r.latency.Mean()
    << ",\"count\":" << r.latency.Count() << "},\"send_lag_us\":{\"p50\":"
    << r.send_lag.Percentile(50) << ",\"p99\":" << r.send_lag.Percentile(99)
    << ",\"max\":" << r.send_lag.Max() << "},\"failed_latency_us\":{\"p50\":"
    << r.failed_latency.Percentile(50) << ",\"p99\":" << r.failed_latency.Percentile(99)
    << ",\"max\":" << r.failed_latency.Max() << ",\"count\":" << r.failed_latency.Count() << "}";
  const uint64_t calls = r.calls_ok + r.calls_failed;
  if (o.server_pid > 0) {
    j << ",\"server_pid\":" << o.server_pid << ",\"server_usage\":";
    UsageJson(j, r.server, calls);
  }
  j << ",\"client_usage\":";
  UsageJson(j, r.client, calls);
  if (!o.method.empty()) {
    j << ",\"method\":\"" << JsonEscape(o.method) << "\",\"input_requests\":"
      << r.distinct_requests << ",\"check_response\":" << (o.check_response ? "true" : "false");
  }
  if (r.server_view_read) {
    j << ",\"server_vars\":";
    ServerViewJson(j, r.server_view);
  }
  if (!r.server_attempts.empty()) {
    j << ",\"lb\":\"" << JsonEscape(o.lb) << "\",\"server_attempts\":{";
    bool first_server = true;
    for (const auto& [server, n] : r.server_attempts) {
      j << (first_server ? "" : ",") << "\"" << JsonEscape(server) << "\":" << n;
      first_server = false;
    }
    j << "}";
  }
  j << "}\n";
  return j.str();
}

}  // namespace arenarpc::press
