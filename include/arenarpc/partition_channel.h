#pragma once
// PartitionChannel: a ParallelChannel whose sub-channels are the partitions of one naming
// service (brpc's PartitionChannel). Every server's tag names its partition, e.g. "1/3" (index 1
// of 3 kinds) with a parser like
//
//   class MyParser : public arenarpc::PartitionParser {
//    public:
//     bool ParseFromTag(const std::string& tag, arenarpc::Partition* out) override {
//       return std::sscanf(tag.c_str(), "%d/%d", &out->index, &out->num_partition_kinds) == 2;
//     }
//   };
//   arenarpc::PartitionChannel channel;
//   arenarpc::PartitionChannelOptions options;   // ChannelOptions + fail_limit, mapper, merger
//   options.call_mapper = new MyMapper;          // owned by the channel
//   channel.Init(3, new MyParser, "file:///etc/servers", "rr", &options);
//
// Partition i is a cluster channel (load balancer `load_balancer_name`) over the servers whose
// tag parses to index i of num_partition_kinds; servers of another kind count, or whose tag does
// not parse, are in no partition. Each call goes to every partition as a ParallelChannel call
// (CallMapper, ResponseMerger, fail_limit; see parallel_channel.h); a partition with no server
// fails its sub-call with EHOSTDOWN.

#include <google/protobuf/service.h>

#include <memory>
#include <string>
#include <vector>

#include "arenarpc/channel.h"
#include "arenarpc/parallel_channel.h"

namespace arenarpc {

struct Partition {
  int index = -1;
  int num_partition_kinds = 0;
};

class PartitionParser {
 public:
  virtual ~PartitionParser() = default;
  virtual bool ParseFromTag(const std::string& tag, Partition* out) = 0;
};

struct PartitionChannelOptions : public ChannelOptions {
  // As ParallelChannelOptions::fail_limit (of the partitions).
  int fail_limit = -1;
  // nullptr = ParallelChannel's defaults; otherwise owned by the channel after Init().
  CallMapper* call_mapper = nullptr;
  ResponseMerger* response_merger = nullptr;
};

class PartitionChannel : public google::protobuf::RpcChannel {
 public:
  PartitionChannel();
  ~PartitionChannel() override;
  PartitionChannel(const PartitionChannel&) = delete;
  PartitionChannel& operator=(const PartitionChannel&) = delete;

  // partition_parser is owned by the channel. Returns 0, or -1 with last_error() saying why.
  int Init(int num_partition_kinds, PartitionParser* partition_parser,
           const char* naming_service_url, const char* load_balancer_name,
           const PartitionChannelOptions* options);
  int partition_count() const noexcept { return static_cast<int>(partitions_.size()); }
  const std::string& last_error() const noexcept { return last_error_; }
  // The servers of partition i now.
  std::vector<ServerInfo> servers(int partition) const;

  void CallMethod(const google::protobuf::MethodDescriptor* method,
                  google::protobuf::RpcController* controller,
                  const google::protobuf::Message* request, google::protobuf::Message* response,
                  google::protobuf::Closure* done) override;

 private:
  std::unique_ptr<PartitionParser> parser_;
  std::shared_ptr<void> naming_;  // the shared naming service the partitions follow
  std::vector<std::unique_ptr<Channel>> partitions_;
  ParallelChannel parallel_;
  std::string last_error_;
};

}  // namespace arenarpc
