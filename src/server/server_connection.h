#pragma once
// ServerConnection: the server's side of one connection. Decodes request frames and takes each
// through admission (stopping → ELOGOFF, max_concurrency / a full queue → ELIMIT, attachment_size
// → EREQUEST, name resolution → ENOSERVICE/ENOMETHOD, too much unsent output → EOVERCROWDED), then
// hands the admitted calls to threads: of the requests one read produced, every one but the last
// is queued for any thread, and the last runs on the reading thread once reading has been re-armed
// (run to completion when nothing else is waiting). With worker_threads all go to the workers.

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>

#include "net/connection.h"
#include "protocol/frame_codec.h"
#include "server/server_state.h"

namespace arenarpc::server {

class CallTask;

class ServerConnection final : public net::Connection::Delegate {
 public:
  explicit ServerConnection(ServerState* state);
  net::Connection::InputResult OnInput(net::Connection& connection, net::BufferChain& input,
                                       net::Connection::Clock::time_point read_at) override;
  void OnClosed(net::Connection& connection) override;

  // A call of this connection started: its request bytes stop counting against
  // max_queued_request_bytes (reading resumes once they are down to half).
  void OnCallStarted(net::Connection& connection, size_t request_bytes);

 private:
  std::unique_ptr<CallTask> Admit(net::Connection& connection, protocol::Frame&& frame,
                                  net::Connection::Clock::time_point read_at);
  void Queue(net::Connection& connection, std::unique_ptr<CallTask> task);
  void UpdateReadBlock(net::Connection& connection);

  ServerState* state_;  // outlives every connection (Join closes them all first)
  protocol::FrameDecoder decoder_;
  std::atomic<size_t> queued_request_bytes_{0};
  std::mutex block_mutex_;               // orders the changes of blocked_
  std::atomic<bool> blocked_{false};     // reading paused for max_queued_request_bytes
};

}  // namespace arenarpc::server
