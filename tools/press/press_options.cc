#include "press/press_options.h"

#include <vector>

#include "press/payload_mix.h"

#include <charconv>
#include <cmath>
#include <string_view>
#include <tuple>

namespace arenarpc::press {

std::string ValidateServerAddress(const std::string& host_port) {
  // list://, file://, dns://, etcd://: checked by Channel::Init (with --lb).
  if (host_port.find("://") != std::string::npos) return "";
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return "server address '" + host_port + "' is not host:port";
  }
  const std::string_view port_text = std::string_view(host_port).substr(colon + 1);
  int port = 0;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port <= 0 || port > 65535) {
    return "server address '" + host_port + "' has an invalid port (1..65535)";
  }
  return "";
}

std::string ValidatePositive(const char* name, double value, bool allow_zero) {
  if (!std::isfinite(value) || value < 0 || (!allow_zero && value == 0)) {
    return std::string("--") + name + " must be " + (allow_zero ? ">= 0" : "> 0") + ", got " +
           std::to_string(value);
  }
  return "";
}

std::string Validate(const PressOptions& o) {
  if (auto e = ValidateServerAddress(o.server); !e.empty()) return e;
  if (o.lb.empty() != (o.server.find("://") == std::string::npos)) {
    return o.lb.empty() ? "--server '" + o.server + "' is a naming URL: give --lb too"
                        : "--lb needs --server to be a naming URL (list://, file://, dns://, etcd://)";
  }
  if (!o.lb.empty() && o.protocol != "baidu_std" && o.protocol != "grpc_channel") {
    return "--lb works with --protocol baidu_std or grpc_channel only";
  }
  if ((o.qps > 0) == (o.concurrency > 0)) {
    return "give exactly one of --qps (open loop) or --concurrency (closed loop)";
  }
  for (const auto& [name, value, zero_ok] :
       {std::tuple{"qps", o.qps, true}, {"concurrency", double(o.concurrency), true},
        {"payload_scale", double(o.payload_scale), false}, {"ring", double(o.ring), true},
        {"warmup_s", o.warmup_s, true}, {"duration_s", o.duration_s, false},
        {"timeout_ms", double(o.timeout_ms), false}, {"connections", double(o.connections), false},
        {"threads", double(o.threads), false}, {"server_pid", double(o.server_pid), true},
        {"max_inflight", double(o.max_inflight), false}}) {
    if (auto e = ValidatePositive(name, value, zero_ok); !e.empty()) return e;
  }
  if (o.payload_scale > 1000) return "--payload_scale must be <= 1000";
  if (!o.payload_mix.empty()) {
    std::vector<PayloadShare> mix;
    if (auto e = ParsePayloadMix(o.payload_mix, &mix); !e.empty()) return e;
    if (!o.proto.empty() || !o.method.empty() || !o.input.empty()) {
      return "--payload_mix applies to the echo workload, not --method";
    }
  }
  if (o.ring > 100000) return "--ring must be <= 100000 (each request is ~136 KB at scale 10)";
  if (o.connection_type != "single" && o.connection_type != "pooled" &&
      o.connection_type != "short") {
    return "--connection_type must be single, pooled or short, got '" + o.connection_type + "'";
  }
  if (o.replay && (!o.method.empty() || !o.input.empty())) {
    return "--replay plays the dump's requests: it takes --proto (to send HTTP+JSON records over "
           "--replay_protocol baidu_std or grpc), not --method or --input";
  }
  const bool any_user = !o.replay && (!o.proto.empty() || !o.method.empty() || !o.input.empty());
  if (any_user && (o.proto.empty() || o.method.empty() || o.input.empty())) {
    return std::string(o.method.empty() ? "--method" : o.proto.empty() ? "--proto" : "--input") +
           " is missing: a user's method needs all of --proto, --method and --input";
  }
  if (o.proto.empty() && !o.proto_path.empty()) return "--proto_path needs --proto";
  if (o.echo_service != "EchoService" && o.echo_service != "OptionalEchoService") {
    return "--echo_service must be EchoService or OptionalEchoService, got '" + o.echo_service +
           "'";
  }
  if (o.echo_service != "EchoService" && (any_user || o.protocol == "grpc")) {
    return "--echo_service applies to the echo workload over baidu_std or http";
  }
  if (!any_user && o.check_response) {
    return "--check_response needs --method (the echo workload is checked by --verify)";
  }
  return "";
}

}  // namespace arenarpc::press
