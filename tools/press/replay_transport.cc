#include "press/replay_transport.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "arenarpc/channel.h"
#include "arenarpc/controller.h"
#include "press/replay_set.h"
#include "press/response_check.h"

namespace arenarpc::press {
namespace {

class ReplayTransport final : public Transport {
 public:
  explicit ReplayTransport(const ReplaySet& set) : set_(set) {}

  bool Init(const TransportOptions& options, std::string* error) override {
    const auto& used = set_.by_protocol();
    for (const char* protocol : {"baidu_std", "grpc"}) {
      if (!used.contains(protocol)) continue;
      ChannelOptions channel_options;
      channel_options.protocol = protocol;
      channel_options.timeout_ms = options.timeout_ms;
      channel_options.connection_type = options.connection_type;
      channel_options.io_threads = options.io_threads;
      channel_options.callback_threads = 0;
      auto& channels = std::string_view(protocol) == "grpc" ? grpc_ : baidu_std_;
      for (int i = 0; i < options.connections; ++i) {
        auto channel = std::make_unique<Channel>();
        if (channel->Init(options.server, &channel_options) != 0) {
          *error = std::string(protocol) + " channel to " + options.server + ": " +
                   channel->last_error();
          return false;
        }
        channels.push_back(std::move(channel));
      }
    }
    if (used.contains("http")) {
      http_ = MakeTransport("http");
      TransportOptions http_options = options;
      http_options.connection_type = "single";
      if (!http_ || !http_->Init(http_options, error)) {
        if (error->empty()) *error = "the http transport is not built in";
        return false;
      }
    }
    return true;
  }

  void Send(const PressRequest& request, DoneCallback done) override {
    const ReplayCall& replay = *request.replay;
    if (replay.protocol == ReplayProtocol::kHttp) {
      http_->Send(request, std::move(done));
      return;
    }
    auto& channels = replay.protocol == ReplayProtocol::kGrpc ? grpc_ : baidu_std_;
    {
      std::lock_guard lock(mu_);
      ++pending_;
    }
    auto call = std::make_unique<Call>(this, std::move(done));
    call->controller.request_attachment().Append(replay.attachment);
    if (replay.compress_type != 0) {
      call->controller.set_request_compress_type(static_cast<CompressType>(replay.compress_type));
    }
    for (const auto& [name, value] : replay.metadata) {
      call->controller.request_user_fields().emplace(name, value);
    }
    Channel& channel = *channels[next_.fetch_add(1, std::memory_order_relaxed) % channels.size()];
    Call* raw = call.release();  // the channel runs it once: Run() deletes it
    channel.CallMethod(replay.method, &raw->controller, &request.user, &raw->response, raw);
  }

  void Drain() override {
    {
      std::unique_lock lock(mu_);
      drained_.wait(lock, [this] { return pending_ == 0; });
    }
    if (http_) http_->Drain();
  }

  ~ReplayTransport() override {
    Drain();
    baidu_std_.clear();
    grpc_.clear();
  }

 private:
  struct Call final : google::protobuf::Closure {
    Call(ReplayTransport* owner, DoneCallback done) : owner(owner), done(std::move(done)) {}
    void Run() override {
      std::unique_ptr<Call> self(this);
      CallResult result;
      result.error_code = controller.ErrorCode();
      std::string text;
      if (result.error_code != 0) {
        text = controller.ErrorText();
        result.error_text = text;
      } else {
        result.response_message = &response;
      }
      done(result);
      ReplayTransport* transport = owner;
      self.reset();
      transport->Finished();
    }
    ReplayTransport* owner;
    DoneCallback done;
    Controller controller;
    OpaqueMessage response;
  };

  void Finished() {
    std::lock_guard lock(mu_);
    if (--pending_ == 0) drained_.notify_all();
  }

  const ReplaySet& set_;
  std::vector<std::unique_ptr<Channel>> baidu_std_, grpc_;
  std::unique_ptr<Transport> http_;
  std::atomic<uint64_t> next_{0};
  std::mutex mu_;
  std::condition_variable drained_;
  int64_t pending_ = 0;
};

}  // namespace

std::unique_ptr<Transport> MakeReplayTransport(const ReplaySet& set) {
  return std::make_unique<ReplayTransport>(set);
}

uint64_t RecordFirstReplies(Transport& transport,
                            std::span<const std::shared_ptr<const PressRequest>> requests,
                            std::span<ReplayCall> calls, int in_flight) {
  // One pass over `indices`, at most `in_flight` calls at a time; returns the records whose call
  // failed for the load's sake (left without a reference).
  auto pass = [&](const std::vector<size_t>& indices, int in_flight) {
    std::mutex mu;
    std::condition_variable done;
    int pending = 0;
    std::vector<size_t> load_failed;
    for (const size_t i : indices) {
      {
        std::unique_lock lock(mu);
        done.wait(lock, [&] { return pending < std::max(1, in_flight); });
        ++pending;
      }
      transport.Send(*requests[i], [&, i](const CallResult& result) {
        std::string reply = ReplyBytes(result);
        std::lock_guard lock(mu);
        ReplayCall& call = calls[i];
        call.has_first_reply = !IsLoadFailure(result.error_code);
        call.first_reply = call.has_first_reply ? std::move(reply) : std::string();
        if (!call.has_first_reply) load_failed.push_back(i);
        --pending;
        done.notify_all();
      });
    }
    std::unique_lock lock(mu);
    done.wait(lock, [&] { return pending == 0; });
    std::sort(load_failed.begin(), load_failed.end());
    return load_failed;
  };
  std::vector<size_t> all(std::min(requests.size(), calls.size()));
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::vector<size_t> left = pass(all, in_flight);
  if (!left.empty()) left = pass(left, 1);  // alone: the burst that made them fail has passed
  return left.size();
}

uint64_t RecordFirstReplies(Transport& transport, ReplaySet& set, int in_flight) {
  return RecordFirstReplies(transport, set.requests(), set.calls(), in_flight);
}

}  // namespace arenarpc::press
