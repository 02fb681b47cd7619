#pragma once
// baidu_std on the client (spec §6): a request is one frame (RpcMeta + payload + attachment) with
// the attempt's correlation_id; replies come back in any order, matched by that id. Frames of
// streams ("STRM", docs/streaming.md) share the connection. Requests wait in the session's queue
// while the socket holds more than kHandOffWindow unwritten, so that one whose call timed out or
// was cancelled meanwhile is dropped unsent, and one handed over later tells the server the
// timeout left then (timeout_ms re-stamped: client/baidu_std_request_frame.h).

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>

#include "client/client_protocol.h"
#include "client/client_session.h"
#include "protocol/frame_codec.h"
#include "protocol/stream_frame.h"

namespace arenarpc::stream {
class StreamHost;
}

namespace arenarpc::client {

class BaiduStdClientSession final : public ClientSession {
 public:
  // Requests are handed to the socket while it holds at most this much unwritten.
  static constexpr uint64_t kHandOffWindow = 256u << 10;

  BaiduStdClientSession(ClientSessionHost& host, const ChannelOptions& options);
  ~BaiduStdClientSession() override;

  void OnConnected() override;
  size_t RequestBytes(const PackedRequest& request) const noexcept override;
  void Submit(int64_t correlation_id, PackedRequest&& request) override;
  void Abandon(int64_t /*correlation_id*/) override {}  // dropped unsent by Pump()
  bool OnInput(net::BufferChain& input) override;
  void Pump() override;
  void OnClosed(int code, const std::string& text) override;
  uint64_t unsent_request_bytes() const noexcept override { return waiting_bytes_; }
  bool requests_waiting() const noexcept override { return !waiting_.empty(); }
  Clock::time_point partial_reply_since() const noexcept override { return partial_since_; }
  size_t open_streams() const noexcept override { return 0; }

 private:
  // Hands the reply frame to its attempt.
  void Deliver(protocol::Frame& frame, bool attachment_error);
  // A "STRM" frame: to the streams bound here, or the wrapped reply that binds one. false: close.
  bool HandleStreamFrame(protocol::StreamFrame& frame);

  ClientSessionHost& host_;
  const size_t max_body_size_;
  const size_t max_unwritten_bytes_;
  protocol::FrameDecoder decoder_;
  protocol::StreamFrameDecoder stream_decoder_;
  std::shared_ptr<stream::StreamHost> stream_host_;  // streams on this connection
  // Frames not handed to the socket yet (connecting, or its window is full), in call order.
  std::deque<std::pair<int64_t, BaiduStdRequestFrame>> waiting_;
  uint64_t waiting_bytes_ = 0;
  Clock::time_point partial_since_{};  // an incomplete reply frame is buffered since; {} = none
};

}  // namespace arenarpc::client
