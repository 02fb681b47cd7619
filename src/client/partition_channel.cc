#include "arenarpc/partition_channel.h"

#include "arenarpc/controller.h"
#include "arenarpc/error_codes.h"
#include "client/deprecated_channel_options.h"
#include "client/fanout_support.h"
#include "cluster/naming_service.h"
#include "cluster/partition_naming.h"

namespace arenarpc {

PartitionChannel::PartitionChannel() = default;

PartitionChannel::~PartitionChannel() {
  partitions_.clear();  // their views detach before the shared naming service stops
  if (naming_) std::static_pointer_cast<cluster::PartitionNaming>(naming_)->Stop();
}

int PartitionChannel::Init(int num_partition_kinds, PartitionParser* partition_parser,
                           const char* naming_service_url, const char* load_balancer_name,
                           const PartitionChannelOptions* options) {
  parser_.reset(partition_parser);
  PartitionChannelOptions effective = options != nullptr ? *options : PartitionChannelOptions{};
  client::ApplyDeprecatedSpellings(&effective);
  // The mapper and merger are the channel's from here on, whatever happens below.
  std::unique_ptr<CallMapper> mapper(effective.call_mapper);
  std::unique_ptr<ResponseMerger> merger(effective.response_merger);
  if (!partitions_.empty()) {
    last_error_ = "PartitionChannel is already initialized";
    return -1;
  }
  if (num_partition_kinds < 1 || partition_parser == nullptr || naming_service_url == nullptr) {
    last_error_ = "PartitionChannel::Init needs num_partition_kinds >= 1, a parser and a URL";
    return -1;
  }
  std::string error;
  cluster::NamingOptions naming_options;
  naming_options.refresh_interval = effective.naming_refresh_interval;
  std::unique_ptr<cluster::NamingService> source =
      cluster::MakeNamingService(naming_service_url, naming_options, &error);
  if (!source) {
    last_error_ = error;
    return -1;
  }
  PartitionParser* parser = parser_.get();
  auto naming = std::make_shared<cluster::PartitionNaming>(
      std::move(source), num_partition_kinds,
      [parser, num_partition_kinds](const std::string& tag, int* index) {
        Partition partition;
        if (!parser->ParseFromTag(tag, &partition) ||
            partition.num_partition_kinds != num_partition_kinds) {
          return false;
        }
        *index = partition.index;
        return true;
      });
  if (!naming->Start(&error)) {
    last_error_ = error;
    return -1;
  }
  naming_ = naming;
  ParallelChannelOptions parallel_options;
  parallel_options.timeout_ms = effective.timeout_ms;
  parallel_options.fail_limit = effective.fail_limit;
  parallel_.Init(&parallel_options);
  CallMapper* const shared_mapper = mapper.get();
  ResponseMerger* const shared_merger = merger.get();
  for (int i = 0; i < num_partition_kinds; ++i) {
    auto channel = std::make_unique<Channel>();
    const std::string name = std::string(naming_service_url) + " partition " +
                             std::to_string(i) + "/" + std::to_string(num_partition_kinds);
    if (channel->InitWithNaming(naming->View(i), name,
                                load_balancer_name != nullptr ? load_balancer_name : "",
                                &effective) != 0) {
      last_error_ = channel->last_error();
      partitions_.clear();
      return -1;
    }
    // The ParallelChannel adopts the mapper and merger at the first partition; the others share
    // them.
    parallel_.AddChannel(channel.get(), DOESNT_OWN_CHANNEL, shared_mapper, shared_merger);
    if (i == 0) {
      (void)mapper.release();
      (void)merger.release();
    }
    partitions_.push_back(std::move(channel));
  }
  last_error_.clear();
  return 0;
}

std::vector<ServerInfo> PartitionChannel::servers(int partition) const {
  if (partition < 0 || partition >= partition_count()) return {};
  return partitions_[partition]->servers();
}

void PartitionChannel::CallMethod(const google::protobuf::MethodDescriptor* method,
                                  google::protobuf::RpcController* controller,
                                  const google::protobuf::Message* request,
                                  google::protobuf::Message* response,
                                  google::protobuf::Closure* done) {
  if (partitions_.empty()) {
    client::FailFanoutCall(controller, EINVAL, "PartitionChannel is not initialized", done);
    return;
  }
  parallel_.CallMethod(method, controller, request, response, done);
}

}  // namespace arenarpc
