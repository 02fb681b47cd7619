#pragma once
// baidu_std on a server connection (spec §1, §5): frames in, calls admitted by correlation id,
// replies as response frames (in any order).

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "capture/request_capture.h"
#include "fiber/scheduler.h"
#include "protocol/frame_codec.h"
#include "protocol/stream_frame.h"
#include "server/server_protocol.h"
#include "stream/stream_host.h"

namespace arenarpc::server {

class BaiduStdServerProtocol final : public ServerProtocol {
 public:
  explicit BaiduStdServerProtocol(const ServerState& state);
  static std::unique_ptr<ServerProtocol> Create(ServerState& state, ProtocolOwner& owner,
                                                bool internal_port);

  std::string_view name() const noexcept override { return "baidu_std"; }
  Step Next(net::Connection& connection, net::BufferChain& input,
            std::chrono::steady_clock::time_point read_at, Decoded* decoded) override;
  const std::string& error() const noexcept override {
    return stream_error_ ? stream_decoder_.error() : decoder_.error();
  }
  size_t DropRequest(net::BufferChain& input) override;
  size_t MissingBytes(const net::BufferChain& input) const noexcept override;
  void Reply(net::Connection& connection, ServerCall& call,
             const google::protobuf::Message& response) override;
  void SendError(net::Connection& connection, int64_t key, const CallError& error) override;
  void OnClosed() override;

 private:
  // Reply()'s first half: false when the call failed (an error frame was packed instead).
  bool PackReply(ServerCall& call, const google::protobuf::Message& response,
                 net::BufferChain* out);
  // A "STRM" frame: to the connection's streams (docs/streaming.md).
  Step NextStreamFrame(net::Connection& connection, net::BufferChain& input);
  std::shared_ptr<stream::StreamHost> StreamHostOf(net::Connection& connection);
  // The reply of a call whose handler accepted a stream was written: the stream starts.
  void ConnectAcceptedStream(int64_t key);

  protocol::FrameDecoder decoder_;  // Next() only
  // The frame Next() decoded last: its meta (the call's CallHead points into it) until the next.
  protocol::Frame frame_;
  std::string invalid_text_;  // its CallHead::invalid_text
  protocol::StreamFrameDecoder stream_decoder_;  // Next() only
  bool stream_error_ = false;
  fiber::Scheduler* const fibers_;
  capture::RequestCapture* const capture_;  // ServerOptions::capture; nullptr = off
  const stream::StreamHost::Limits stream_limits_;
  const std::shared_ptr<stream::StreamRegistry> stream_registry_;  // the server's (the pages)
  std::mutex streams_mutex_;
  bool closed_ = false;
  std::shared_ptr<stream::StreamHost> stream_host_;  // created by the first stream offer
  // Accepted streams whose reply is packed but not written yet, by correlation id.
  std::atomic<int> replies_with_streams_{0};
  std::unordered_multimap<int64_t, std::shared_ptr<stream::Stream>> accepted_;
};

}  // namespace arenarpc::server
