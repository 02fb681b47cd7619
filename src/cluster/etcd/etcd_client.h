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

// "host:port[,host:port...]/prefix" -> endpoints and the key prefix, normalized to start and end
// with '/' ("/services/echo/"): servers are the keys "<prefix><ip:port>".
struct EtcdTarget {
  std::vector<std::string> endpoints;
  std::string prefix;
};
bool ParseEtcdTarget(std::string_view target, EtcdTarget* out, std::string* error);

// range_end that makes [prefix, range_end) every key starting with prefix.
std::string PrefixRangeEnd(std::string prefix);

// A context whose call fails after `timeout`.
std::unique_ptr<grpc::ClientContext> ContextWithTimeout(std::chrono::milliseconds timeout);

class EtcdClient {
 public:
  explicit EtcdClient(std::vector<std::string> endpoints);

  etcdserverpb::KV::Stub& kv() { return *kv_; }
  etcdserverpb::Watch::Stub& watch() { return *watch_; }
  etcdserverpb::Lease::Stub& lease() { return *lease_; }
  const std::string& endpoint() const { return endpoints_[index_]; }
  void Rotate();

 private:
  void Connect();

  const std::vector<std::string> endpoints_;
  size_t index_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch_;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease_;
};

}  // namespace arenarpc::cluster::etcd
