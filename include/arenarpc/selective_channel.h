#pragma once
// SelectiveChannel: each call goes to one of several sub-channels (brpc's SelectiveChannel), chosen
// round robin; a sub-call that failed before its request could have run (connect refused or timed
// out, no server in rotation, EOVERCROWDED, ELOGOFF, ELIMIT) is retried on another sub-channel,
// at most max_retry times, within the call's deadline. A sub-channel may be any RpcChannel: a
// single-server Channel, a cluster Channel, a ParallelChannel.
//
//   arenarpc::SelectiveChannel schan;
//   arenarpc::ChannelOptions options;            // timeout_ms, max_retry and retry_policy are used
//   schan.Init("rr", &options);
//   schan.AddChannel(new_channel_to_dc1, nullptr);  // owned from now on
//   schan.AddChannel(new_channel_to_dc2, nullptr);
//   example::EchoService_Stub(&schan).Echo(&cntl, &request, &response, done);
//
// Thread-safe for calls; AddChannel only before the first call.

#include <google/protobuf/service.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "arenarpc/channel.h"

namespace arenarpc {

// brpc's handle of an added sub-channel (its index here).
using ChannelHandle = uint64_t;

class SelectiveChannel : public google::protobuf::RpcChannel {
 public:
  SelectiveChannel();
  ~SelectiveChannel() override;
  SelectiveChannel(const SelectiveChannel&) = delete;
  SelectiveChannel& operator=(const SelectiveChannel&) = delete;

  // lb_name: "rr" (or nullptr/""); options == nullptr: defaults. Returns 0, or -1 with
  // last_error() saying why (another balancer, invalid options, a second Init).
  int Init(const char* lb_name, const ChannelOptions* options);
  // Takes ownership of sub_channel. Returns 0, or -1 (after the first call, or nullptr).
  int AddChannel(google::protobuf::RpcChannel* sub_channel, ChannelHandle* handle);
  const std::string& last_error() const noexcept { return last_error_; }
  size_t channel_count() const noexcept { return subs_.size(); }

  // controller must be an arenarpc::Controller. done == nullptr: synchronous.
  void CallMethod(const google::protobuf::MethodDescriptor* method,
                  google::protobuf::RpcController* controller,
                  const google::protobuf::Message* request, google::protobuf::Message* response,
                  google::protobuf::Closure* done) override;

 private:
  ChannelOptions options_;
  bool initialized_ = false;
  std::atomic<bool> started_{false};  // AddChannel is refused after the first call
  std::vector<std::unique_ptr<google::protobuf::RpcChannel>> subs_;
  std::atomic<uint64_t> next_{0};
  std::string last_error_;
};

}  // namespace arenarpc
