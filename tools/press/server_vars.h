#pragma once
// The server's own view of a press run, from its /vars page read when the measured window opens
// and after it closed. /vars lines are "name : value". Names (m = the method's full name with '.'
// replaced by '_'):
//   rpc_server_<m>_count, _error_count, _latency_sum_us      cumulative
//   rpc_server_<m>_latency_p99_us                            last 10 s (end value)
//   rpc_server_<m>_memory_<field>                            cumulative, except the gauges below
//   process_cpu_usage_us (cumulative), process_rss_bytes (gauge)

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arenarpc::press {

using VarsMap = std::map<std::string, double, std::less<>>;

// Parses /vars text; lines that are not "name : number" are skipped.
VarsMap ParseVars(std::string_view text);

// "arenarpc.example.EchoService.Echo" -> "arenarpc_example_EchoService_Echo".
std::string VarsMethodName(std::string_view method_full_name);

// The memory fields reported as end values, not deltas.
bool IsMemoryGauge(std::string_view field);

struct ServerView {
  bool valid = false;
  std::string note;                  // when not valid: why (one line)
  std::string method_prefix;         // "rpc_server_<m>_"
  double calls = 0, errors = 0;      // deltas over the window
  std::optional<double> mean_latency_us;    // delta latency_sum / delta calls
  std::optional<double> latency_p99_us;     // end value
  std::optional<double> cpu_us;             // delta process_cpu_usage_us
  std::optional<double> cpu_us_per_call;
  std::optional<double> rss_bytes;          // end value
  std::vector<std::pair<std::string, double>> memory_deltas;  // cumulative fields
  std::vector<std::pair<std::string, double>> memory_gauges;  // gauges, end values
};

// The view of `method_full_name` over the window between two /vars readings.
ServerView ComputeServerView(const VarsMap& before, const VarsMap& after,
                             std::string_view method_full_name);

}  // namespace arenarpc::press
