#include "net/connection.h"

#include <asio/buffer.hpp>
#include <asio/post.hpp>

#include <array>

#include "net/endpoint.h"

namespace arenarpc::net {
namespace {

std::atomic<uint64_t> g_next_connection_id{1};

// Reads land in whole I/O pages; a read that fills its page is followed by more non-blocking
// reads (bounded) so that a large frame is decoded once instead of once per page.
constexpr size_t kMinReadSpace = 1024;
constexpr int kMaxReadsPerWakeup = 32;
// Gather-write batch: iovecs handed to one sendmsg().
constexpr size_t kMaxIoVecs = 64;

}  // namespace

std::shared_ptr<Connection> Connection::Create(asio::ip::tcp::socket socket,
                                               std::unique_ptr<Delegate> delegate,
                                               const Options& options) {
  return std::shared_ptr<Connection>(new Connection(std::move(socket), std::move(delegate), options));
}

Connection::Connection(asio::ip::tcp::socket socket, std::unique_ptr<Delegate> delegate,
                       const Options& options)
    : socket_(std::move(socket)),
      delegate_(std::move(delegate)),
      options_(options),
      id_(g_next_connection_id.fetch_add(1, std::memory_order_relaxed)),
      idle_timer_(socket_.get_executor()) {
  asio::error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  socket_.non_blocking(true, ignored);
  if (auto remote = socket_.remote_endpoint(ignored); !ignored) remote_side_ = EndpointToString(remote);
  if (auto local = socket_.local_endpoint(ignored); !ignored) local_side_ = EndpointToString(local);
}

Connection::~Connection() = default;

asio::io_context::executor_type Connection::executor() noexcept {
  return static_cast<asio::io_context&>(socket_.get_executor().context()).get_executor();
}

void Connection::Start() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    if (self->closed()) return;
    self->last_activity_ = std::chrono::steady_clock::now();
    if (self->options_.idle_timeout_sec > 0) {
      self->ArmIdleTimer(std::chrono::seconds(self->options_.idle_timeout_sec));
    }
    self->ReadSome();
  });
}

void Connection::ReadSome() {
  std::span<char> space = input_.PrepareWrite(kMinReadSpace);
  socket_.async_read_some(asio::buffer(space.data(), space.size()),
                          [self = shared_from_this()](const asio::error_code& error, size_t bytes) {
                            self->OnRead(error, bytes);
                          });
}

void Connection::OnRead(const asio::error_code& error, size_t bytes) {
  if (closed()) return;
  if (error) {  // EOF, reset or our own Close()
    if (error != asio::error::operation_aborted) close_error_ = error;
    CloseNow();
    return;
  }
  input_.CommitWrite(bytes);
  // The page was filled: more bytes are probably waiting. Drain them without another wakeup.
  for (int reads = 1; reads < kMaxReadsPerWakeup; ++reads) {
    std::span<char> space = input_.PrepareWrite(kMinReadSpace);
    asio::error_code more_error;
    const size_t more = socket_.read_some(asio::buffer(space.data(), space.size()), more_error);
    if (more_error == asio::error::would_block) break;
    if (more_error) {
      // Deliver what arrived before the error, then close.
      delegate_->OnInput(*this, input_);
      close_error_ = more_error;
      CloseNow();
      return;
    }
    input_.CommitWrite(more);
    if (more < space.size()) break;
  }
  last_activity_ = std::chrono::steady_clock::now();
  if (!delegate_->OnInput(*this, input_)) {
    CloseNow();
    return;
  }
  if (!closed()) ReadSome();
}

void Connection::Write(BufferChain&& bytes) {
  const size_t n = bytes.size();
  if (n == 0) return;
  {
    std::lock_guard lock(mutex_);
    if (closed()) return;
    pending_.Append(std::move(bytes));
    unwritten_.fetch_add(n, std::memory_order_relaxed);
    if (write_active_) return;  // the active writer picks these bytes up
    write_active_ = true;
  }
  // Run-to-completion handlers call this on the loop thread: write at once, no extra hop.
  if (executor().running_in_this_thread()) {
    Flush();
  } else {
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->Flush(); });
  }
}

void Connection::Flush() {
  while (!closed()) {
    if (writing_.empty()) {
      std::lock_guard lock(mutex_);
      if (pending_.empty()) {
        write_active_ = false;
        return;
      }
      writing_.Append(std::move(pending_));
    }
    std::array<asio::const_buffer, kMaxIoVecs> buffers;
    const size_t count = std::min(writing_.span_count(), kMaxIoVecs);
    for (size_t i = 0; i < count; ++i) {
      const std::span<const char> span = writing_.span(i);
      buffers[i] = asio::const_buffer(span.data(), span.size());
    }
    asio::error_code error;
    const size_t written =
        socket_.write_some(std::span<const asio::const_buffer>(buffers.data(), count), error);
    if (error == asio::error::would_block || error == asio::error::try_again) {
      socket_.async_wait(asio::ip::tcp::socket::wait_write,
                         [self = shared_from_this()](const asio::error_code& wait_error) {
                           if (wait_error) {
                             if (wait_error != asio::error::operation_aborted) {
                               self->close_error_ = wait_error;
                             }
                             self->CloseNow();
                           } else {
                             self->Flush();
                           }
                         });
      return;
    }
    if (error) {
      close_error_ = error;
      CloseNow();
      return;
    }
    writing_.PopFront(written);
    unwritten_.fetch_sub(written, std::memory_order_relaxed);
    bytes_written_.fetch_add(written, std::memory_order_release);
    last_activity_ = std::chrono::steady_clock::now();
  }
}

void Connection::Close() {
  if (closed()) return;
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->CloseNow(); });
}

void Connection::CloseNow() {
  const auto self = shared_from_this();  // OnClosed may drop the owner's last reference
  {
    std::lock_guard lock(mutex_);
    if (closed_.exchange(true, std::memory_order_acq_rel)) return;
    pending_.clear();
    unwritten_.store(0, std::memory_order_relaxed);
  }
  writing_.clear();
  asio::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);  // completes pending reads/waits with operation_aborted
  idle_timer_.cancel();
  input_.clear();
  delegate_->OnClosed(*this);
}

void Connection::ArmIdleTimer(std::chrono::steady_clock::duration after) {
  idle_timer_.expires_after(after);
  idle_timer_.async_wait([self = shared_from_this()](const asio::error_code& error) {
    if (error || self->closed()) return;
    const auto idle_limit = std::chrono::seconds(self->options_.idle_timeout_sec);
    const auto idle_for = std::chrono::steady_clock::now() - self->last_activity_;
    if (idle_for >= idle_limit) {
      self->closed_by_idle_timeout_ = true;
      self->CloseNow();
    } else {
      self->ArmIdleTimer(idle_limit - idle_for);
    }
  });
}

}  // namespace arenarpc::net
