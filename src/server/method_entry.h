#pragma once
// One registered method: what to call, how its messages are made, and its counters.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "arenarpc/latency_histogram.h"
#include "arenarpc/memory/message_memory.h"

namespace google::protobuf {
class MethodDescriptor;
class Service;
}  // namespace google::protobuf

namespace arenarpc::server {

// Everything a call's MessagePair depends on, kept alive together by shared ownership so that a
// pair retained past Stop() (two-phase completion) can still be released safely. Members are
// destroyed bottom-up: the method binding before its strategy, the strategy before the service
// that owns the prototypes.
struct MethodBinding {
  std::shared_ptr<google::protobuf::Service> service;
  std::shared_ptr<memory::MessageMemory> strategy;
  std::unique_ptr<memory::MethodMemory> memory;
};

struct MethodEntry {
  std::string full_name;  // "pkg.Service.Method"
  const google::protobuf::MethodDescriptor* descriptor = nullptr;
  google::protobuf::Service* service = nullptr;
  std::shared_ptr<google::protobuf::Service> service_owner;  // for MethodBinding::service
  std::string memory_mode;                 // set by Server::Start
  std::shared_ptr<MethodBinding> binding;  // set by Server::Start

  std::atomic<uint64_t> calls{0}, errors{0}, rejected{0};
  std::atomic<int64_t> in_flight{0};
  LatencyHistogram latency;        // socket -> reply queued
  LatencyHistogram queue_latency;  // socket -> taken by a thread
};

}  // namespace arenarpc::server
