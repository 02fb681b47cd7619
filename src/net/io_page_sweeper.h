#pragma once
// IoPageSweeper: runs the I/O page pool's idle release (PagePoolOptions::idle_release) on a timer
// of one event loop. The pool checks for idle pages only as it is used, so without this a server
// whose traffic stopped after a burst would keep the burst's pages cached until its next call.
// Does nothing when the I/O pool is not a CachedPageAllocator with an idle_release.

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>

namespace arenarpc::memory {
class CachedPageAllocator;
}  // namespace arenarpc::memory

namespace arenarpc::net {

class IoPageSweeper {
 public:
  // Starts sweeping on `loop` (which must be running, or run later).
  explicit IoPageSweeper(asio::io_context& loop);
  // Stop() must have been called and the loop stopped, or never run again, before this.
  ~IoPageSweeper() = default;
  IoPageSweeper(const IoPageSweeper&) = delete;
  IoPageSweeper& operator=(const IoPageSweeper&) = delete;

  // Cancels the timer (on the loop): after it, the loop has no sweep left to wait for, so the
  // loop's Stop() can return. Idempotent; from any thread.
  void Stop();

 private:
  void Arm();

  // The I/O pool (set once, before any buffer exists); null: not a CachedPageAllocator.
  memory::CachedPageAllocator* const pages_;
  asio::strand<asio::io_context::executor_type> strand_;
  asio::steady_timer timer_;  // used on strand_ only
  bool stopped_ = false;      // on strand_ only
};

}  // namespace arenarpc::net
