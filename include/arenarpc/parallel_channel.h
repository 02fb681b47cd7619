#pragma once
// ParallelChannel: one call sent to every sub-channel at once (brpc's ParallelChannel).
//
//   arenarpc::ParallelChannel pchan;
//   arenarpc::ParallelChannelOptions options;   // timeout 500 ms, fail_limit = every sub-call
//   pchan.Init(&options);
//   pchan.AddChannel(&channel_a, arenarpc::DOESNT_OWN_CHANNEL, nullptr, nullptr);
//   pchan.AddChannel(&channel_b, arenarpc::DOESNT_OWN_CHANNEL, new MyMapper, new MyMerger);
//   example::EchoService_Stub(&pchan).Echo(&cntl, &request, &response, done);
//
// Each sub-call gets the request (or what the CallMapper maps it to) and a response of its own;
// once every sub-call ended, the successful sub-responses are merged into `response` in sub-channel
// order (ResponseMerger, default Message::MergeFrom). The call fails with ETOOMANYFAILS (1005) as
// soon as fail_limit sub-calls failed (the others are cancelled), and with ECANCELED when the
// mapper skipped every sub-channel. Sub-calls share the call's deadline (Controller::timeout_ms()
// if set, else ParallelChannelOptions::timeout_ms).
//
// Thread-safe for calls; AddChannel only before the first call. Sub-channels must outlive the
// ParallelChannel unless it owns them.

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/service.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace arenarpc {

enum ChannelOwnership { OWNS_CHANNEL, DOESNT_OWN_CHANNEL };

// What one sub-channel is called with; flags may ask the channel to delete request/response after
// the call (they were created by the mapper).
class SubCall {
 public:
  enum Flags { DELETE_REQUEST = 1, DELETE_RESPONSE = 2 };
  SubCall(const google::protobuf::MethodDescriptor* method, const google::protobuf::Message* request,
          google::protobuf::Message* response, int flags)
      : method(method), request(request), response(response), flags(flags) {}
  // This sub-channel is not called.
  static SubCall Skip() { return SubCall(nullptr, nullptr, nullptr, kSkip); }
  // The mapping failed: the whole call fails with EREQUEST.
  static SubCall Bad() { return SubCall(nullptr, nullptr, nullptr, kBad); }
  bool is_skip() const noexcept { return flags == kSkip; }
  bool is_bad() const noexcept { return flags == kBad; }

  const google::protobuf::MethodDescriptor* method;
  const google::protobuf::Message* request;
  google::protobuf::Message* response;
  int flags;

 private:
  static constexpr int kSkip = -1, kBad = -2;
};

class CallMapper {
 public:
  virtual ~CallMapper() = default;
  virtual SubCall Map(int channel_index, int channel_count,
                      const google::protobuf::MethodDescriptor* method,
                      const google::protobuf::Message* request,
                      google::protobuf::Message* response) = 0;
};

class ResponseMerger {
 public:
  enum Result {
    MERGED,    // merged
    FAIL,      // this sub-call counts as failed
    FAIL_ALL,  // the whole call fails (ERESPONSE)
  };
  virtual ~ResponseMerger() = default;
  virtual Result Merge(google::protobuf::Message* response,
                       const google::protobuf::Message* sub_response) = 0;
};

struct ParallelChannelOptions {
  // Deadline of the whole call (every sub-call shares it); -1 = none. A Controller's own
  // timeout_ms() > 0 wins.
  int64_t timeout_ms = 500;
  // The call fails once this many sub-calls failed; <= 0 or more than the sub-calls = all of them.
  int fail_limit = -1;
};

class ParallelChannel : public google::protobuf::RpcChannel {
 public:
  ParallelChannel();
  ~ParallelChannel() override;
  ParallelChannel(const ParallelChannel&) = delete;
  ParallelChannel& operator=(const ParallelChannel&) = delete;

  // options == nullptr: defaults. Returns 0, or -1 with last_error() saying why (invalid options).
  int Init(const ParallelChannelOptions* options);
  // mapper/merger: nullptr = the defaults; otherwise owned by this channel (the same object may
  // be added with several sub-channels). Returns 0, or -1 (after the first call, or nullptr).
  int AddChannel(google::protobuf::RpcChannel* sub_channel, ChannelOwnership ownership,
                 CallMapper* mapper, ResponseMerger* merger);
  const std::string& last_error() const noexcept { return last_error_; }
  size_t channel_count() const noexcept { return subs_.size(); }

  // controller must be an arenarpc::Controller. done == nullptr: synchronous.
  void CallMethod(const google::protobuf::MethodDescriptor* method,
                  google::protobuf::RpcController* controller,
                  const google::protobuf::Message* request, google::protobuf::Message* response,
                  google::protobuf::Closure* done) override;

 private:
  struct Sub {
    google::protobuf::RpcChannel* channel;
    bool owned;
    std::shared_ptr<CallMapper> mapper;
    std::shared_ptr<ResponseMerger> merger;
  };
  template <class T>
  std::shared_ptr<T> Adopt(T* object);

  ParallelChannelOptions options_;
  std::vector<Sub> subs_;
  std::vector<std::shared_ptr<void>> adopted_;  // mappers and mergers, each once
  std::atomic<bool> started_{false};  // AddChannel is refused after the first call
  std::string last_error_;
};

}  // namespace arenarpc
