#pragma once
// baidu_std on a server connection (spec §1, §5): frames in, calls admitted by correlation id,
// replies as response frames (in any order).

#include "protocol/frame_codec.h"
#include "server/server_protocol.h"

namespace arenarpc::server {

class BaiduStdServerProtocol final : public ServerProtocol {
 public:
  explicit BaiduStdServerProtocol(const ServerState& state);
  static std::unique_ptr<ServerProtocol> Create(ServerState& state, ServerConnection& owner,
                                                bool internal_port);

  std::string_view name() const noexcept override { return "baidu_std"; }
  Step Next(ServerConnection& server, net::Connection& connection, net::BufferChain& input,
            std::chrono::steady_clock::time_point read_at,
            std::unique_ptr<PendingCall>* call) override;
  const std::string& error() const noexcept override { return decoder_.error(); }
  bool OpenRequest(ServerCall& call, const RequestPayload& payload, protocol::PayloadBytes* bytes,
                   std::string* error_text) override;
  bool PackReply(ServerCall& call, const google::protobuf::Message& response,
                 net::BufferChain* out) override;
  void SendReply(net::Connection& connection, int64_t key, net::BufferChain&& reply) override;
  void SendError(net::Connection& connection, int64_t key, int code,
                 std::string_view text) override;

 private:
  const size_t max_body_size_;
  protocol::FrameDecoder decoder_;  // Next() only
};

}  // namespace arenarpc::server
