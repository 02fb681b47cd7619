#include "net/acceptor.h"

#include <asio/bind_executor.hpp>
#include <asio/post.hpp>

#include <future>

namespace arenarpc::net {

std::shared_ptr<Acceptor> Acceptor::Listen(EventLoopGroup& loops,
                                           const asio::ip::tcp::endpoint& endpoint,
                                           OnAccept on_accept) {
  return std::shared_ptr<Acceptor>(new Acceptor(loops, endpoint, std::move(on_accept)));
}

Acceptor::Acceptor(EventLoopGroup& loops, const asio::ip::tcp::endpoint& endpoint,
                   OnAccept on_accept)
    : loops_(loops), strand_(asio::make_strand(loops.loop(0))), acceptor_(loops.loop(0)),
      retry_timer_(loops.loop(0)),
      on_accept_(std::move(on_accept)) {
  acceptor_.open(endpoint.protocol());
  acceptor_.set_option(asio::ip::tcp::acceptor::reuse_address(true));
  acceptor_.bind(endpoint);
  acceptor_.listen(asio::socket_base::max_listen_connections);
  port_ = acceptor_.local_endpoint().port();
}

void Acceptor::Start() {
  asio::post(strand_, [self = shared_from_this()] { self->AcceptOne(); });
}

void Acceptor::AcceptOne() {
  if (closed_) return;
  acceptor_.async_accept(
      loops_.Next(), asio::bind_executor(strand_, [self = shared_from_this()](
                                                      const asio::error_code& error,
                                                      asio::ip::tcp::socket socket) {
        if (self->closed_ || error == asio::error::operation_aborted) return;
        if (error) {
          // Out of descriptors or memory: the pending connection stays in the backlog; retry soon
          // instead of spinning.
          self->log_.Log("accept failed: " + error.message() + "; retrying in 100 ms");
          self->retry_timer_.expires_after(std::chrono::milliseconds(100));
          self->retry_timer_.async_wait(
              asio::bind_executor(self->strand_, [self](const asio::error_code& timer_error) {
                if (!timer_error) self->AcceptOne();
              }));
          return;
        }
        // The socket already belongs to its own loop: continue there.
        const auto executor = socket.get_executor();
        asio::post(executor, [self, socket = std::move(socket)]() mutable {
          self->on_accept_(std::move(socket));
        });
        self->AcceptOne();
      }));
}

void Acceptor::Close() {
  std::promise<void> closed;
  asio::post(strand_, [self = shared_from_this(), &closed] {
    self->closed_ = true;
    asio::error_code ignored;
    self->acceptor_.close(ignored);
    self->retry_timer_.cancel();
    closed.set_value();
  });
  closed.get_future().wait();
}

}  // namespace arenarpc::net
