#pragma once
// Connection: one TCP socket bound to one event loop. Reads into BufferChain blocks from the I/O
// page pool and hands them to a Delegate (the protocol side); writes frames queued from any thread,
// whole and in call order, with gather I/O straight from the queued chains.

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "arenarpc/buffer_chain.h"

namespace arenarpc::net {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // Protocol callbacks. Both run on the connection's loop thread.
  class Delegate {
   public:
    virtual ~Delegate() = default;
    // Bytes were appended to `input`: consume every complete message. false = close the connection.
    virtual bool OnInput(Connection& connection, BufferChain& input) = 0;
    // The connection closed (peer, error, idle timeout or Close()). Called exactly once.
    virtual void OnClosed(Connection& connection) = 0;
  };

  struct Options {
    int idle_timeout_sec = -1;  // close after this long without reading or writing; -1 = never
  };

  // The socket must belong to one of the loops; the Delegate lives as long as the connection.
  static std::shared_ptr<Connection> Create(asio::ip::tcp::socket socket,
                                            std::unique_ptr<Delegate> delegate,
                                            const Options& options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts reading (and the idle timer). Any thread; call once.
  void Start();
  // Queues bytes (normally one whole frame) for writing. Any thread. Writes from several threads
  // never interleave; each call's bytes go out contiguously, in the order the calls returned.
  // Dropped silently once the connection is closed (the peer cannot receive them anyway).
  void Write(BufferChain&& bytes);
  // Closes the socket from its loop. Any thread; idempotent. Queued, unwritten bytes are dropped.
  void Close();

  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  // Why it closed (valid once closed(), read from OnClosed or later).
  bool closed_by_idle_timeout() const noexcept { return closed_by_idle_timeout_; }
  // Bytes queued and not yet accepted by the kernel.
  size_t unwritten_bytes() const noexcept { return unwritten_.load(std::memory_order_relaxed); }
  // Bytes the kernel accepted so far (monotonic; final once OnClosed runs). The client uses it to
  // tell requests that were completely written from those cut off by a broken connection.
  uint64_t bytes_written() const noexcept { return bytes_written_.load(std::memory_order_acquire); }
  // Why the socket failed (eof, connection_reset, ...); empty after Close() or an idle timeout.
  // Read it from OnClosed.
  const asio::error_code& close_error() const noexcept { return close_error_; }
  uint64_t id() const noexcept { return id_; }
  const std::string& remote_side() const noexcept { return remote_side_; }  // "ip:port"
  const std::string& local_side() const noexcept { return local_side_; }    // "ip:port"
  Delegate& delegate() noexcept { return *delegate_; }
  asio::io_context::executor_type executor() noexcept;

 private:
  Connection(asio::ip::tcp::socket socket, std::unique_ptr<Delegate> delegate,
             const Options& options);
  void ReadSome();
  void OnRead(const asio::error_code& error, size_t bytes);
  void Flush();  // loop thread: writes until done or EAGAIN (then waits for writability)
  void CloseNow();  // loop thread
  void ArmIdleTimer(std::chrono::steady_clock::duration after);

  asio::ip::tcp::socket socket_;
  std::unique_ptr<Delegate> delegate_;
  const Options options_;
  const uint64_t id_;
  std::string remote_side_, local_side_;
  BufferChain input_;                       // loop thread only
  BufferChain writing_;                     // loop thread only: bytes being written now
  std::mutex mutex_;                        // guards pending_, write_active_
  BufferChain pending_;                     // queued by Write(), not yet moved to writing_
  bool write_active_ = false;               // a Flush() is scheduled or waiting for writability
  std::atomic<bool> closed_{false};
  std::atomic<size_t> unwritten_{0};
  std::atomic<uint64_t> bytes_written_{0};
  asio::error_code close_error_;  // loop thread only
  asio::steady_timer idle_timer_;
  std::chrono::steady_clock::time_point last_activity_;  // loop thread only
  bool closed_by_idle_timeout_ = false;                   // loop thread only
};

}  // namespace arenarpc::net
