#pragma once
// ClientConnection: one TCP connection of a channel. Connects (with the connect timeout), then
// runs on a net::Connection; keeps the calls sent on it by correlation id and hands replies to
// them. All of its state lives on its loop thread: the public methods post there.
//
// A request counts as sent once the kernel accepted its last byte (net::Connection::
// bytes_written()). When the connection breaks, unsent calls get a retryable failure, sent calls
// fail for good: a request that may have run is never sent twice.

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "arenarpc/buffer_chain.h"
#include "net/connection.h"
#include "protocol/frame_codec.h"

namespace arenarpc::client {

class ChannelCore;
class ClientCall;
class SubChannel;

class ClientConnection : public std::enable_shared_from_this<ClientConnection> {
 public:
  // exclusive: at most one call at a time (pooled/short); its timeout closes the connection.
  // Starts connecting at once.
  static std::shared_ptr<ClientConnection> Create(ChannelCore* core,
                                                  std::shared_ptr<SubChannel> server,
                                                  asio::io_context& loop, bool exclusive);
  ~ClientConnection();
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  // Any thread: queue one attempt's frame. Never calls back into `call` before returning.
  void Submit(std::shared_ptr<ClientCall> call, int64_t correlation_id, net::BufferChain frame);
  // Any thread: the call with this id ended without a reply (timeout). Forgets it; an exclusive
  // connection is closed instead (its late reply must not be read as the next call's).
  void Abandon(int64_t correlation_id);
  // Any thread: close; pending calls fail with `code`/`text`. Idempotent.
  void Close(int code, std::string text);

  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  bool exclusive() const noexcept { return exclusive_; }

 private:
  class Delegate;
  struct Pending {
    std::shared_ptr<ClientCall> call;
    uint64_t end_offset = 0;  // position of the frame's last byte in the written stream
    bool queued = false;      // handed to net::Connection (else waiting for the connect)
  };

  ClientConnection(ChannelCore* core, std::shared_ptr<SubChannel> server, asio::io_context& loop,
                   bool exclusive);
  void StartConnect();
  void OnConnected(const asio::error_code& error);
  void DoSubmit(std::shared_ptr<ClientCall> call, int64_t correlation_id, net::BufferChain frame);
  void WriteFrame(int64_t correlation_id, net::BufferChain frame);
  bool OnInput(net::BufferChain& input);
  void HandleFrame(protocol::Frame& frame);
  void OnSocketClosed(net::Connection& connection);
  // Marks the connection closed and fails every pending call (loop thread).
  void FailAll(int code, const std::string& text, uint64_t bytes_written);

  ChannelCore* const core_;
  const std::shared_ptr<SubChannel> server_;
  asio::io_context& loop_;
  const bool exclusive_;
  std::atomic<bool> closed_{false};
  // Loop thread only:
  asio::ip::tcp::socket connecting_socket_;
  asio::steady_timer connect_timer_;
  bool connect_timed_out_ = false;
  std::shared_ptr<net::Connection> connection_;
  protocol::FrameDecoder decoder_;
  std::unordered_map<int64_t, Pending> pending_;
  std::vector<std::pair<int64_t, net::BufferChain>> waiting_;  // frames queued while connecting
  uint64_t queued_bytes_ = 0;  // bytes handed to connection_->Write() so far
  int close_code_ = 0;         // set when we close on purpose (framing error, Close())
  std::string close_text_;
};

}  // namespace arenarpc::client
