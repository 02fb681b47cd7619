#pragma once
// ServerConnection: the server's side of one connection. Decodes request frames and takes each
// through admission (stopping → ELOGOFF, max_concurrency / a full server queue → ELIMIT,
// attachment_size → EREQUEST, name resolution → ENOSERVICE/ENOMETHOD, too much unsent output →
// EOVERCROWDED) into the connection's backlog.
//
// The backlog is drained by at most one task per handler thread: the reading thread starts one
// and runs it itself once reading has been re-armed (run to completion when nothing else waits);
// more are queued for the other threads when more requests wait. A drainer runs one call and, if
// requests remain, queues itself again behind the other connections' work, so one connection
// holds at most one place per thread in the shared queue and calls of a connection run in
// parallel without a blocking call holding up the rest. Decoding (and reading) pauses while the
// backlog holds max_queued_requests_per_connection calls or max_queued_request_bytes bytes.

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>

#include "net/connection.h"
#include "protocol/frame_codec.h"
#include "server/cancel_registry.h"
#include "server/call_task.h"
#include "server/server_state.h"

namespace arenarpc::server {

class ServerConnection final : public net::Connection::Delegate {
 public:
  ServerConnection(ServerState* state, int max_drainers);
  net::Connection::InputResult OnInput(net::Connection& connection, net::BufferChain& input,
                                       net::Connection::Clock::time_point read_at) override;
  void OnClosed(net::Connection& connection) override;

 private:
  class Drainer;
  std::unique_ptr<PendingCall> Admit(net::Connection& connection, protocol::Frame&& frame,
                                     net::Connection::Clock::time_point read_at);
  // One drainer's turn: starts the oldest backlog call; queues the drainer again if more wait.
  void DrainOne(net::Connection& connection);
  void PostDrainer(net::Connection& connection);
  bool BacklogFull() const;                             // backlog_mutex_ held
  void UpdateReadBlock(net::Connection& connection);    // backlog_mutex_ held

  ServerState* state_;  // outlives every connection (Join closes them all first)
  const int max_drainers_;
  protocol::FrameDecoder decoder_;  // OnInput only

  std::mutex backlog_mutex_;
  std::deque<PendingCall> backlog_;
  size_t backlog_bytes_ = 0;
  int drainers_ = 0;        // drainers running or queued
  bool read_blocked_ = false;
  CancelRegistry cancels_;  // calls waiting in NotifyOnCancel(); fired by OnClosed
};

}  // namespace arenarpc::server
