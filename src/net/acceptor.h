#pragma once
// Acceptor: listens on one endpoint and hands every accepted socket, already bound to the next
// event loop (round-robin), to a callback that runs on that socket's loop.

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>

#include <functional>
#include <memory>

#include "net/event_loop_group.h"
#include "util/rate_limited_log.h"

namespace arenarpc::net {

class Acceptor : public std::enable_shared_from_this<Acceptor> {
 public:
  using OnAccept = std::function<void(asio::ip::tcp::socket socket)>;

  // Binds and listens at once (throws asio::system_error with the reason); Start() accepts.
  static std::shared_ptr<Acceptor> Listen(EventLoopGroup& loops,
                                          const asio::ip::tcp::endpoint& endpoint,
                                          OnAccept on_accept);
  void Start();
  // Stops accepting and closes the listening socket. A socket accepted just before may still
  // reach the callback afterwards (it must check its owner's state). Not from a loop thread.
  void Close();
  uint16_t port() const noexcept { return port_; }

 private:
  Acceptor(EventLoopGroup& loops, const asio::ip::tcp::endpoint& endpoint, OnAccept on_accept);
  void AcceptOne();

  EventLoopGroup& loops_;
  // Its handlers run one at a time even when several threads run the loop.
  asio::strand<asio::io_context::executor_type> strand_;
  asio::ip::tcp::acceptor acceptor_;  // lives on loop 0
  asio::steady_timer retry_timer_;    // backs off after EMFILE & co
  OnAccept on_accept_;
  uint16_t port_ = 0;
  bool closed_ = false;               // guarded by running on the acceptor's strand
  util::RateLimitedLog log_{1};  // accept failures repeat every 100 ms while they last
};

}  // namespace arenarpc::net
