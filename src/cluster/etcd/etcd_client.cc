#include "cluster/etcd/etcd_client.h"

namespace arenarpc::cluster::etcd {

bool ParseEtcdTarget(std::string_view target, EtcdTarget* out, std::string* error) {
  const size_t slash = target.find('/');
  std::string_view hosts = target.substr(0, slash);
  const std::string_view path = slash == std::string_view::npos ? "" : target.substr(slash);
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

EtcdClient::EtcdClient(std::vector<std::string> endpoints) : endpoints_(std::move(endpoints)) {
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
  // refuses pings more often than every 5 s: --grpc-keepalive-min-time).
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  arguments.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  channel_ = grpc::CreateCustomChannel(endpoints_[index_], grpc::InsecureChannelCredentials(),
                                       arguments);
  kv_ = etcdserverpb::KV::NewStub(channel_);
  watch_ = etcdserverpb::Watch::NewStub(channel_);
  lease_ = etcdserverpb::Lease::NewStub(channel_);
}

}  // namespace arenarpc::cluster::etcd
