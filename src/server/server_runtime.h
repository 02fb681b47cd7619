#pragma once
// ServerRuntime: the threads and listening sockets of a started server — the I/O loops, the worker
// pool (worker_threads > 0), the fiber scheduler that runs every handler, the main and internal
// acceptors. Start() builds one and moves it into ServerState only once everything succeeded, so a
// failed Start() unwinds by destroying it; the destructor releases in reverse order.

#include <asio/ip/tcp.hpp>
#include <asio/thread_pool.hpp>
#include <functional>
#include <memory>
#include <string>

#include "arenarpc/server.h"
#include "fiber/scheduler.h"
#include "server/fiber_shares.h"
#include "net/acceptor.h"
#include "net/event_loop_group.h"
#include "net/io_page_sweeper.h"

namespace arenarpc::server {

class ServerRuntime {
 public:
  using OnAccept = std::function<void(asio::ip::tcp::socket socket, bool internal_port)>;

  // Starts the threads of `options` (num_threads, worker_threads, fibers); nothing listens yet.
  explicit ServerRuntime(const ServerOptions& options);
  ~ServerRuntime();
  ServerRuntime(const ServerRuntime&) = delete;
  ServerRuntime& operator=(const ServerRuntime&) = delete;

  // Binds `endpoint` (and options.internal_address:internal_port when internal_port >= 0).
  // false: *error says which and why. Sockets are accepted only after StartAccepting().
  bool Listen(const asio::ip::tcp::endpoint& endpoint, const ServerOptions& options,
              OnAccept on_accept, std::string* error);
  void StartAccepting();
  // Stops accepting on both ports (Stop()); once. Not from a loop thread.
  void CloseListeners();
  // The calling thread is one of the server's (an I/O thread, a worker): waiting there for the
  // server would wait for itself.
  bool OnServerThread() const;
  // Waits for the fibers still running (a handler waiting on a backend), then stops the loops
  // and joins the workers (Join()).
  void Join();

  int handler_threads() const noexcept { return handler_threads_; }  // workers, else I/O threads
  int port() const noexcept;                                         // -1 before Listen()
  int internal_port() const noexcept;                                // -1 without internal_port
  asio::thread_pool* workers() noexcept { return workers_.get(); }   // nullptr: no worker_threads
  fiber::Scheduler& fibers() noexcept { return *fibers_; }
  FiberShares& fiber_shares() noexcept { return fiber_shares_; }

 private:
  // Lets the loops finish their queued handlers and joins their threads (idempotent).
  void StopLoops();

  int handler_threads_ = 1;
  std::unique_ptr<net::EventLoopGroup> loops_;  // one io_context shared by all I/O threads
  // I/O pages a burst left cached go back even if no call follows (stopped before the loops).
  std::unique_ptr<net::IoPageSweeper> io_page_sweeper_;
  std::unique_ptr<asio::thread_pool> workers_;
  std::unique_ptr<fiber::Scheduler> fibers_;  // on the workers, else on the I/O threads
  FiberShares fiber_shares_;
  std::shared_ptr<net::Acceptor> acceptor_;
  std::shared_ptr<net::Acceptor> internal_acceptor_;
  bool listeners_closed_ = false;  // the thread that starts and stops the server
};

}  // namespace arenarpc::server
