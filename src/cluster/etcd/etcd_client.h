#pragma once
// EtcdClient: gRPC stubs of etcd v3's KV, Watch and Lease services on one of several endpoints;
// Rotate() moves to the next endpoint after a failure. Not thread-safe: one owner thread.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/etcd/rpc.grpc.pb.h"

namespace arenarpc::cluster::etcd {

// The timings an etcd:// URL may set as query parameters (names and ranges: kEtcdTimingParameters
// in etcd_client.cc; meaning: docs/cluster.md).
struct EtcdTimings {
  std::chrono::milliseconds retry_interval{500};     // pause before re-reading and re-watching
  std::chrono::milliseconds progress_interval{1000};  // progress requests, deadline checks
  std::chrono::milliseconds watch_deadline{3000};    // a watch that heard nothing is cancelled
  std::chrono::milliseconds stale_after{5000};       // a list unconfirmed this long is warned of
  std::chrono::milliseconds call_timeout{2000};      // each Range, lease and key call
  std::chrono::milliseconds keepalive_interval{10000};  // HTTP/2 pings while a call is open
  std::chrono::milliseconds keepalive_timeout{5000};    // an unanswered ping fails the connection
  bool operator==(const EtcdTimings&) const = default;
};

// "host:port[,host:port...]/prefix[?name=value&...]" -> endpoints, the key prefix normalized to
// start and end with '/' ("/services/echo/": servers are the keys "<prefix><ip:port>"; the query is
// not part of it) and the timings the query sets (the others keep their defaults).
struct EtcdTarget {
  std::vector<std::string> endpoints;
  std::string prefix;
  EtcdTimings timings;
};
bool ParseEtcdTarget(std::string_view target, EtcdTarget* out, std::string* error);

// range_end that makes [prefix, range_end) every key starting with prefix.
std::string PrefixRangeEnd(std::string prefix);

// A context whose call fails after `timeout`.
std::unique_ptr<grpc::ClientContext> ContextWithTimeout(std::chrono::milliseconds timeout);

class EtcdClient {
 public:
  explicit EtcdClient(std::vector<std::string> endpoints, const EtcdTimings& timings = {});

  etcdserverpb::KV::Stub& kv() { return *kv_; }
  etcdserverpb::Watch::Stub& watch() { return *watch_; }
  etcdserverpb::Lease::Stub& lease() { return *lease_; }
  const std::string& endpoint() const { return endpoints_[index_]; }
  void Rotate();

 private:
  void Connect();

  const std::vector<std::string> endpoints_;
  const std::chrono::milliseconds keepalive_interval_, keepalive_timeout_;
  size_t index_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch_;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease_;
};

}  // namespace arenarpc::cluster::etcd
