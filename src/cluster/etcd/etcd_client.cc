#include "cluster/etcd/etcd_client.h"

#include <algorithm>
#include <charconv>
#include <utility>

namespace arenarpc::cluster::etcd {
namespace {

constexpr int64_t kMaxTimingMs = 3'600'000;  // one hour

struct TimingParameter {
  std::string_view name;
  std::chrono::milliseconds EtcdTimings::*field;
};
constexpr TimingParameter kEtcdTimingParameters[] = {
    {"retry_interval_ms", &EtcdTimings::retry_interval},
    {"progress_interval_ms", &EtcdTimings::progress_interval},
    {"watch_deadline_ms", &EtcdTimings::watch_deadline},
    {"stale_after_ms", &EtcdTimings::stale_after},
    {"call_timeout_ms", &EtcdTimings::call_timeout},
    {"keepalive_interval_ms", &EtcdTimings::keepalive_interval},
    {"keepalive_timeout_ms", &EtcdTimings::keepalive_timeout},
};

// "name=value&..." -> *timings; *error says what is wrong (without the URL).
bool ParseTimings(std::string_view query, EtcdTimings* timings, std::string* error) {
  std::vector<std::string_view> seen;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      *error = "parameter '" + std::string(item) + "' is not name=value";
      return false;
    }
    const std::string_view name = item.substr(0, equals), value = item.substr(equals + 1);
    const TimingParameter* parameter = nullptr;
    for (const TimingParameter& p : kEtcdTimingParameters) {
      if (p.name == name) parameter = &p;
    }
    if (parameter == nullptr) {
      std::string known;
      for (const TimingParameter& p : kEtcdTimingParameters) {
        known += (known.empty() ? "" : ", ") + std::string(p.name);
      }
      *error = "unknown parameter '" + std::string(name) + "' (known: " + known + ")";
      return false;
    }
    if (std::ranges::find(seen, name) != seen.end()) {
      *error = "parameter " + std::string(name) + " is given twice";
      return false;
    }
    seen.push_back(name);
    int64_t ms = 0;
    const auto [end, status] = std::from_chars(value.data(), value.data() + value.size(), ms);
    if (value.empty() || status == std::errc::invalid_argument ||
        end != value.data() + value.size()) {
      *error = std::string(item) + " is not a whole number of milliseconds";
      return false;
    }
    if (status == std::errc::result_out_of_range || ms < 1 || ms > kMaxTimingMs) {
      *error = std::string(item) + " is out of range (1.." + std::to_string(kMaxTimingMs) + ")";
      return false;
    }
    timings->*(parameter->field) = std::chrono::milliseconds(ms);
  }
  // The monitor confirms a healthy watch once per progress interval: a deadline or a staleness
  // bound not above it would cancel healthy watches or report healthy lists.
  for (const auto& [name, bound] :
       {std::pair{"watch_deadline_ms", timings->watch_deadline},
        std::pair{"stale_after_ms", timings->stale_after}}) {
    if (bound <= timings->progress_interval) {
      *error = std::string(name) + "=" + std::to_string(bound.count()) +
               " must be greater than progress_interval_ms=" +
               std::to_string(timings->progress_interval.count()) +
               " (etcd confirms a healthy watch once per progress interval)";
      return false;
    }
  }
  return true;
}

}  // namespace

bool ParseEtcdTarget(std::string_view target, EtcdTarget* out, std::string* error) {
  const size_t question = target.find('?');
  const std::string_view location = target.substr(0, question);
  const size_t slash = location.find('/');
  std::string_view hosts = location.substr(0, slash);
  const std::string_view path = slash == std::string_view::npos ? "" : location.substr(slash);
  EtcdTarget parsed;
  while (!hosts.empty()) {
    const size_t comma = hosts.find(',');
    const std::string_view host = hosts.substr(0, comma);
    hosts = comma == std::string_view::npos ? std::string_view() : hosts.substr(comma + 1);
    const size_t colon = host.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == host.size() ||
        host.substr(colon + 1).find_first_not_of("0123456789") != std::string_view::npos) {
      *error = "etcd://" + std::string(target) + ": endpoint '" + std::string(host) +
               "' is not host:port";
      return false;
    }
    parsed.endpoints.emplace_back(host);
  }
  if (parsed.endpoints.empty()) {
    *error = "etcd://" + std::string(target) + " names no endpoint (expected etcd://host:port/prefix)";
    return false;
  }
  if (path.size() <= 1) {
    *error = "etcd://" + std::string(target) + " has no key prefix (expected etcd://host:port/prefix)";
    return false;
  }
  parsed.prefix = std::string(path);
  if (parsed.prefix.back() != '/') parsed.prefix += '/';
  if (question != std::string_view::npos &&
      !ParseTimings(target.substr(question + 1), &parsed.timings, error)) {
    *error = "etcd://" + std::string(target) + ": " + *error;
    return false;
  }
  *out = std::move(parsed);
  return true;
}

std::string PrefixRangeEnd(std::string prefix) {
  while (!prefix.empty()) {
    if (static_cast<unsigned char>(prefix.back()) < 0xff) {
      prefix.back() = static_cast<char>(prefix.back() + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');  // every key
}

std::unique_ptr<grpc::ClientContext> ContextWithTimeout(std::chrono::milliseconds timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

EtcdClient::EtcdClient(std::vector<std::string> endpoints, const EtcdTimings& timings)
    : endpoints_(std::move(endpoints)),
      keepalive_interval_(timings.keepalive_interval),
      keepalive_timeout_(timings.keepalive_timeout) {
  Connect();
}

void EtcdClient::Rotate() {
  if (endpoints_.size() < 2) return;  // gRPC reconnects the one channel by itself
  index_ = (index_ + 1) % endpoints_.size();
  Connect();
}

void EtcdClient::Connect() {
  grpc::ChannelArguments arguments;
  // An etcd that restarts is found again within about a second.
  arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Own connections: not shared through gRPC's global subchannel pool with other clients of the
  // same etcd in this process (a server registering and a channel watching), whose backoff state
  // would otherwise be shared.
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // HTTP/2 pings while calls are open, so a connection to a vanished host fails by itself (etcd
  // refuses pings more often than every 5 s: --grpc-keepalive-min-time; docs/cluster.md).
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(keepalive_interval_.count()));
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, static_cast<int>(keepalive_timeout_.count()));
  arguments.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  channel_ = grpc::CreateCustomChannel(endpoints_[index_], grpc::InsecureChannelCredentials(),
                                       arguments);
  kv_ = etcdserverpb::KV::NewStub(channel_);
  watch_ = etcdserverpb::Watch::NewStub(channel_);
  lease_ = etcdserverpb::Lease::NewStub(channel_);
}

}  // namespace arenarpc::cluster::etcd
