#pragma once
// ServerConnection: the server's side of one connection. Decodes request frames and takes each
// through spec §5.1: stopping → ELOGOFF, max_concurrency → ELIMIT, attachment_size → EREQUEST,
// name resolution → ENOSERVICE/ENOMETHOD, overcrowded → EOVERCROWDED, then parse + handler
// (on this I/O thread, or on the worker pool).

#include <string>

#include "net/connection.h"
#include "protocol/frame_codec.h"
#include "server/cancel_registry.h"
#include "server/server_state.h"

namespace arenarpc::server {

class ServerConnection final : public net::Connection::Delegate {
 public:
  explicit ServerConnection(ServerState* state);
  bool OnInput(net::Connection& connection, net::BufferChain& input) override;
  void OnClosed(net::Connection& connection) override;

 private:
  void Dispatch(net::Connection& connection, protocol::Frame&& frame);

  ServerState* state_;  // outlives every connection (Join closes them all first)
  protocol::FrameDecoder decoder_;
  CancelRegistry cancels_;  // calls waiting in NotifyOnCancel(); fired by OnClosed
};

}  // namespace arenarpc::server
