#include "net/connection.h"

#include <asio/buffer.hpp>
#include <asio/post.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <limits>
#include <utility>

#include <sys/socket.h>

#include "net/endpoint.h"
#include "net/scatter_read.h"
#include "net/tls_session.h"

namespace arenarpc::net {
namespace {

std::atomic<uint64_t> g_next_connection_id{1};

// Writes queued by the reading thread inside Delegate::OnInput go out together when OnInput
// returns (one sendmsg for the replies and refusals of one input turn); a write from any other
// thread, or outside OnInput, is flushed at once. t_input_turn is the connection whose OnInput
// runs on this thread; t_flush_owed says that a Write() in it left its flush to the turn's end.
thread_local Connection* t_input_turn = nullptr;
thread_local bool t_flush_owed = false;

// Reads land in whole I/O pages; a read that fills its page is followed by more non-blocking
// reads, so that a large frame is decoded once instead of once per page: up to kReadBytesPerRound
// between two OnInput calls, up to kMaxBytesPerWakeup before the connection lets other work run.
constexpr size_t kMinReadSpace = 1024;
constexpr size_t kReadBytesPerRound = 256u << 10;
constexpr size_t kMaxBytesPerWakeup = 2u << 20;
// Gather-write batch: iovecs handed to one sendmsg().
constexpr size_t kMaxIoVecs = 64;
// Frames up to this size are copied into the queue's tail page instead of linking their own
// blocks: a stream of tiny replies then pins about its own size, not a page per reply.
constexpr size_t kCoalesceMaxBytes = 2048;

int64_t Nanos(Connection::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

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
      watchdog_(socket_.get_executor()) {
  asio::error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  socket_.non_blocking(true, ignored);
  if (auto remote = socket_.remote_endpoint(ignored); !ignored) remote_side_ = EndpointToString(remote);
  if (auto local = socket_.local_endpoint(ignored); !ignored) local_side_ = EndpointToString(local);
}

// The descriptor closes here, when no operation can use it any more.
Connection::~Connection() {
  if (watched_.load(std::memory_order_acquire)) RunWriteWatches(/*closed=*/true);
}

asio::io_context::executor_type Connection::executor() noexcept {
  return static_cast<asio::io_context&>(socket_.get_executor().context()).get_executor();
}

asio::error_code Connection::close_error() const {
  std::lock_guard lock(mutex_);
  return close_error_;
}

std::string Connection::tls_error() const {
  std::lock_guard lock(mutex_);
  return tls_error_;
}

void Connection::Touch() noexcept {
  last_activity_ns_.store(Nanos(Clock::now()), std::memory_order_relaxed);
}

void Connection::Start() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->Touch();
    {
      std::lock_guard lock(self->mutex_);
      if (self->closed()) return;
      self->reading_ = true;
      if (self->options_.idle_timeout_sec > 0 || self->options_.read_timeout_ms > 0 ||
          self->options_.first_byte_timeout_ms > 0 || self->options_.write_timeout_ms > 0) {
        self->ArmWatchdog(std::chrono::milliseconds(0));
      }
    }
    self->ArmRead();
  });
}

void Connection::ArmRead() {
  if (skip_bytes_ > 0 && !tls_) {
    // The rest of a refused message comes first: wait until the socket holds some, then
    // discard it without copying it (ReadAvailable), instead of reading it into a buffer.
    armed_read_space_ = 0;
    socket_.async_wait(asio::socket_base::wait_read,
                       [self = shared_from_this()](const asio::error_code& error) {
                         self->OnRead(error, 0, /*readable=*/true);
                       });
    return;
  }
  std::span<char> space = read_target().PrepareWrite(kMinReadSpace);
  armed_read_space_ = space.size();
  socket_.async_read_some(asio::buffer(space.data(), space.size()),
                          [self = shared_from_this()](const asio::error_code& error, size_t bytes) {
                            self->OnRead(error, bytes);
                          });
}

void Connection::OnRead(const asio::error_code& error, size_t bytes, bool readable) {
  if (error || closed()) {  // EOF, reset, or our own shutdown
    input_.clear();
    CloseNow(CloseReason::kPeer, error == asio::error::operation_aborted ? asio::error_code() : error);
    return;
  }
  read_target().CommitWrite(bytes);  // 0 when resuming: OnInput sees only what was buffered
  if (skip_bytes_ > 0 && !tls_) DropSkipped();  // before anything later is discarded unread
  if (bytes > 0 && !read_any_.load(std::memory_order_relaxed)) {
    read_any_.store(true, std::memory_order_relaxed);
  }
  // Read and hand over in rounds while bytes keep coming, so that a server busy with handlers
  // still reads (and admits or rejects) requests as fast as they arrive, not one read per call.
  std::unique_ptr<InputTask> run_next;
  asio::error_code read_error;
  bool keep_open = true, input_waits = false;
  size_t read_now = bytes;
  // A read that left room in its buffer emptied the socket: asking again would only return
  // EAGAIN (one system call per small request). Bytes arriving since are picked up when the read
  // is armed again: Asio tries the socket before it waits for the next readiness event.
  for (bool more = readable || (bytes > 0 && bytes >= armed_read_space_);;) {
    if (more) more = ReadAvailable(&read_now, &read_error);
    if (tls_ && !ciphertext_in_.empty()) {
      const bool was_done = tls_->handshake_done();
      const TlsSession::Status status = tls_->Decrypt(ciphertext_in_, input_);
      if (status == TlsSession::Status::kFailed) {
        if (run_next) run_next->Run();
        FailTls();
        return;
      }
      if (status == TlsSession::Status::kClosed && !read_error) read_error = asio::error::eof;
      if (!was_done && tls_->handshake_done()) delegate_->OnTlsHandshakeDone(*this);
      RequestFlush();  // handshake records, or plaintext that waited for the handshake
    }
    if (skip_bytes_ > 0 && tls_) DropSkipped();
    const Clock::time_point now = Clock::now();
    last_activity_ns_.store(Nanos(now), std::memory_order_relaxed);
    Connection* const outer = t_input_turn;
    const bool outer_owed = std::exchange(t_flush_owed, false);
    t_input_turn = this;
    InputResult result = delegate_->OnInput(*this, input_, now);
    t_input_turn = outer;
    if (std::exchange(t_flush_owed, outer_owed)) {
      bool flush = false;
      {
        std::lock_guard lock(mutex_);
        // Another thread's Write (or CloseWhenFlushed) may have flushed the turn's bytes already.
        flush = !write_active_ && !pending_.empty() && !closed();
        write_active_ = write_active_ || flush;
      }
      if (flush) Flush();
    }
    keep_open = result.keep_open;
    input_waits = result.input_waits;
    skip_bytes_ += result.skip_bytes;
    read_hint_ = result.read_hint;
    if (result.run_next) {
      if (!run_next) {
        run_next = std::move(result.run_next);
      } else {
        asio::post(socket_.get_executor(),
                   [task = std::move(result.run_next)] { task->Run(); });
      }
    }
    const bool partial = (!input_.empty() || result.message_in_progress || skip_bytes_ > 0 ||
                          (tls_ && tls_->InRecord())) &&
                         !input_waits;
    if (!partial) {  // waiting on us is no slow sender
      partial_since_ns_.store(0, std::memory_order_relaxed);
    } else if (result.message_completed ||
               partial_since_ns_.load(std::memory_order_relaxed) == 0) {
      partial_since_ns_.store(Nanos(now), std::memory_order_relaxed);  // a new message began
    }
    // StartTls() from OnInput left ciphertext to decrypt and hand over.
    const bool tls_started = tls_ && !ciphertext_in_.empty();
    if ((!more && !tls_started) || read_error || !keep_open || input_waits ||
        read_now >= kMaxBytesPerWakeup) {
      break;
    }
  }
  if (read_error || !keep_open) {
    // What was read before the error is still served, as far as the socket takes the reply.
    if (run_next) run_next->Run();
    input_.clear();
    CloseNow(read_error ? CloseReason::kPeer : CloseReason::kLocal, read_error);
    return;
  }
  ContinueReading(input_waits);  // from here another thread may read this connection
  if (run_next) run_next->Run();
}

bool Connection::ReadAvailable(size_t* read_now, asio::error_code* error) {
  if (skip_bytes_ > 0 && !tls_ && !DiscardSkipped(read_now, error)) return false;
  // A large message's rest and the next one's head, or a full round.
  const size_t limit = read_hint_ > 0 ? std::min(read_hint_, kReadBytesPerRound)
                                      : kReadBytesPerRound;
  for (size_t round = 0; round < limit;) {
    // One system call for many pages: the socket held at least a full buffer a moment ago.
    ScatterRead space(read_target(), limit - round);
    const size_t n = socket_.read_some(space.buffers(), *error);
    if (*error == asio::error::would_block || *error == asio::error::try_again) {
      error->clear();
      return false;
    }
    if (*error) return false;  // what arrived before it is still delivered
    space.Commit(n);
    round += n;
    *read_now += n;
    if (n < space.size()) return false;  // the socket is most likely empty now
  }
  return true;
}

bool Connection::DiscardSkipped(size_t* read_now, asio::error_code* error) {
  while (skip_bytes_ > 0) {
    const size_t want = std::min<size_t>(skip_bytes_, std::numeric_limits<ssize_t>::max());
    const ssize_t n = ::recv(socket_.native_handle(), nullptr, want, MSG_TRUNC | MSG_DONTWAIT);
    if (n > 0) {
      skip_bytes_ -= static_cast<size_t>(n);
      *read_now += static_cast<size_t>(n);
      if (options_.bytes_discarded != nullptr) {
        options_.bytes_discarded->fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
      }
      continue;
    }
    if (n == 0) {
      *error = asio::error::eof;
    } else if (errno == EINTR) {
      continue;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
      *error = asio::error_code(errno, asio::error::get_system_category());
    }
    return false;
  }
  return true;
}

void Connection::DropSkipped() {
  const size_t n = std::min(skip_bytes_, input_.size());
  input_.PopFront(n);
  skip_bytes_ -= n;
}

void Connection::ResumeReading() {
  asio::post(socket_.get_executor(),
             [self = shared_from_this()] { self->OnRead(asio::error_code(), 0); });
}

void Connection::ContinueReading(bool input_waits) {
  {
    std::lock_guard lock(mutex_);
    if (unwritten_held_bytes() > options_.max_unwritten_bytes) read_blocks_ |= kOutputFull;
    if (closed() || read_blocks_ != 0) {
      if (!closed() && options_.read_pauses != nullptr) {
        options_.read_pauses->fetch_add(1, std::memory_order_relaxed);
      }
      reading_ = false;
      return;
    }
  }
  if (input_waits) {
    ResumeReading();
  } else {
    ArmRead();
  }
}

void Connection::Unblock(uint32_t reason) {
  {
    std::lock_guard lock(mutex_);
    if ((read_blocks_ & reason) == 0) return;
    read_blocks_ &= ~reason;
    if (read_blocks_ != 0 || reading_ || closed()) return;
    reading_ = true;
  }
  // From the connection's executor (the caller may be deep inside a write or a handler), and
  // through OnInput first: complete messages may be waiting in the input already.
  ResumeReading();
}

void Connection::SetDelegateBlocked(bool blocked) {
  if (!blocked) {
    Unblock(kDelegateBlocked);
    return;
  }
  std::lock_guard lock(mutex_);
  read_blocks_ |= kDelegateBlocked;
}

void Connection::Write(BufferChain&& bytes, uint64_t* end_offset) {
  const size_t n = bytes.size();
  {
    std::lock_guard lock(mutex_);
    const uint64_t end = bytes_queued_.load(std::memory_order_relaxed) + n;
    if (end_offset != nullptr) *end_offset = end;
    if (n == 0) return;
    if (closed()) {
      if (end_offset != nullptr) *end_offset = UINT64_MAX;  // never written
      return;
    }
    bytes_queued_.store(end, std::memory_order_release);
    if (n <= kCoalesceMaxBytes) {
      for (size_t i = 0; i < bytes.span_count(); ++i) {
        const std::span<const char> span = bytes.span(i);
        pending_.Append(std::string_view(span.data(), span.size()));
      }
    } else {
      pending_.Append(std::move(bytes));
    }
    pending_held_.store(pending_.held_bytes(), std::memory_order_relaxed);
    if (write_active_) return;  // the active writer picks these bytes up
    if (t_input_turn == this) {   // the reading thread flushes once its turn ends
      t_flush_owed = true;
      return;
    }
    write_active_ = true;
  }
  bytes.clear();  // a coalesced frame's own pages go back before the write
  // Any thread of the connection's io_context writes at once, without an extra hop.
  if (executor().running_in_this_thread()) {
    Flush();
  } else {
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->Flush(); });
  }
}

bool Connection::TakePending() {
  bool close = false;
  {
    std::unique_lock lock(mutex_);
    if (tls_ && !closed()) {
      // Plaintext waits for the handshake; the handshake's own records go at once.
      BufferChain plaintext;
      if (!pending_.empty() && tls_->handshake_done()) {
        plaintext = std::move(pending_);
        pending_held_.store(0, std::memory_order_relaxed);
      }
      if (!plaintext.empty() || tls_->HasOutput()) {
        lock.unlock();
        EncryptTaken(plaintext);
        return true;
      }
    } else if (!pending_.empty() && !closed()) {
      writing_.Append(std::move(pending_));
      pending_held_.store(0, std::memory_order_relaxed);
      writing_held_.store(writing_.held_bytes(), std::memory_order_relaxed);
      return true;
    }
    write_active_ = false;
    close = close_when_flushed_ && !closed();
  }
  if (close) CloseNow(CloseReason::kLocal);
  return false;
}

void Connection::Flush() {
  for (;;) {
    if (closed()) {
      writing_.clear();
      writing_held_.store(0, std::memory_order_relaxed);
      std::lock_guard lock(mutex_);
      write_active_ = false;
      return;
    }
    if (writing_.empty() && !TakePending()) return;
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
      if (write_blocked_since_ns_.load(std::memory_order_relaxed) == 0) {
        write_blocked_since_ns_.store(Nanos(Clock::now()), std::memory_order_relaxed);
      }
      socket_.async_wait(asio::ip::tcp::socket::wait_write,
                         [self = shared_from_this()](const asio::error_code& wait_error) {
                           if (wait_error) self->CloseNow(CloseReason::kPeer, wait_error);
                           self->Flush();
                         });
      return;
    }
    if (error) {
      CloseNow(CloseReason::kPeer, error);
      continue;  // clears writing_ and ends the flush
    }
    if (written > 0) write_blocked_since_ns_.store(0, std::memory_order_relaxed);
    writing_.PopFront(written);
    writing_held_.store(writing_.held_bytes(), std::memory_order_relaxed);
    if (!tls_) {
      bytes_written_.fetch_add(written, std::memory_order_release);
    } else {
      ciphertext_written_ += written;
      while (!tls_marks_.empty() && tls_marks_.front().first <= ciphertext_written_) {
        bytes_written_.store(tls_marks_.front().second, std::memory_order_release);
        tls_marks_.pop_front();
      }
    }
    Touch();
    if (watched_.load(std::memory_order_acquire)) RunWriteWatches(/*closed=*/false);
    if (unwritten_held_bytes() <= options_.max_unwritten_bytes / 2) {
      Unblock(kOutputFull);
      std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with NotifyWhenDrained
      if (drained_wanted_.load(std::memory_order_relaxed)) PostDrained();
    }
  }
}

void Connection::NotifyWhenDrained() {
  drained_wanted_.store(true, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with Flush
  if (unwritten_held_bytes() <= options_.max_unwritten_bytes / 2) PostDrained();
}

void Connection::WatchWrites(WriteWatch watch) {
  {
    std::lock_guard lock(watch_mutex_);
    if (watch(bytes_written(), closed())) return;
    write_watches_.push_back(std::move(watch));
    watched_.store(true, std::memory_order_seq_cst);
  }
  // A write or a close that finished between the first look and the flag missed the watch.
  RunWriteWatches(closed());
}

void Connection::RunWriteWatches(bool closed) {
  std::lock_guard lock(watch_mutex_);
  const uint64_t written = bytes_written();
  std::erase_if(write_watches_, [&](WriteWatch& watch) { return watch(written, closed) || closed; });
  watched_.store(!write_watches_.empty(), std::memory_order_release);
}

void Connection::PostDrained() {
  if (!drained_wanted_.exchange(false, std::memory_order_acq_rel)) return;
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    if (!self->closed()) self->delegate_->OnOutputDrained(*self);
  });
}

void Connection::SetOutputStalled(bool stalled) noexcept {
  if (!stalled) {
    output_stalled_since_ns_.store(0, std::memory_order_relaxed);
    return;
  }
  int64_t idle = 0;
  output_stalled_since_ns_.compare_exchange_strong(idle, Nanos(Clock::now()),
                                                   std::memory_order_relaxed);
}

void Connection::EncryptTaken(BufferChain& plaintext) {
  const uint64_t base_ciphertext = ciphertext_queued_;  // writing_ is empty here
  const uint64_t base_plaintext = plaintext_encrypted_;
  const bool ok = tls_->Encrypt(plaintext, writing_, [&](size_t ciphertext, size_t consumed) {
    tls_marks_.emplace_back(base_ciphertext + ciphertext, base_plaintext + consumed);
    plaintext_encrypted_ = base_plaintext + consumed;
  });
  tls_->TakeOutput(writing_);
  ciphertext_queued_ = base_ciphertext + writing_.size();
  writing_held_.store(writing_.held_bytes(), std::memory_order_relaxed);
  if (!ok) {
    {
      std::lock_guard lock(mutex_);
      tls_error_ = tls_->error();
    }
    CloseNow(CloseReason::kLocal);  // Flush sees closed() next, drops writing_ and stops
  }
}

void Connection::StartTls(std::unique_ptr<TlsSession> session) {
  {
    std::lock_guard lock(mutex_);
    tls_ = std::move(session);
  }
  ciphertext_in_.Append(std::move(input_));
  RequestFlush();  // a client's ClientHello
}

void Connection::RequestFlush() {
  {
    std::lock_guard lock(mutex_);
    if (closed() || write_active_) return;  // an active flusher looks again before it stops
    if (!(tls_->handshake_done() && !pending_.empty()) && !tls_->HasOutput()) return;
    write_active_ = true;
  }
  if (executor().running_in_this_thread()) {
    Flush();
  } else {
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->Flush(); });
  }
}

void Connection::FailTls() {
  input_.clear();
  ciphertext_in_.clear();
  {
    std::lock_guard lock(mutex_);
    tls_error_ = tls_->error();
  }
  RequestFlush();  // TLS's alert tells the peer why
  CloseWhenFlushed();
}

void Connection::Close() { CloseNow(CloseReason::kLocal); }

void Connection::CloseWhenFlushed() {
  bool now = false, flush = false;
  {
    std::lock_guard lock(mutex_);
    if (closed()) return;
    close_when_flushed_ = true;
    read_blocks_ |= kClosing;
    // Nothing queued (an idle flusher leaves pending_ empty), unless an input turn still owes
    // its flush: then this thread flushes, and closes once that is written.
    flush = !write_active_ && !pending_.empty();
    now = !write_active_ && !flush;
    write_active_ = write_active_ || flush;
  }
  if (flush) {
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->Flush(); });
  } else if (now) {
    CloseNow(CloseReason::kLocal);
  }
}

void Connection::CloseNow(CloseReason reason, const asio::error_code& error) {
  const auto self = shared_from_this();  // OnClosed may drop the owner's last reference
  {
    std::lock_guard lock(mutex_);
    if (closed()) return;
    close_reason_.store(reason, std::memory_order_release);
    close_error_ = error;
    closed_.store(true, std::memory_order_release);
    pending_.clear();
    pending_held_.store(0, std::memory_order_relaxed);
    watchdog_.cancel();
  }
  // Wakes the armed read and write waits (they see closed() and end); the descriptor itself is
  // closed by the destructor.
  asio::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  if (watched_.load(std::memory_order_seq_cst)) RunWriteWatches(/*closed=*/true);
  delegate_->OnClosed(*this);
}

void Connection::ArmWatchdog(Clock::duration after) {
  watchdog_.expires_after(after);
  watchdog_.async_wait([self = shared_from_this()](const asio::error_code& error) {
    if (!error) self->OnWatchdog();
  });
}

void Connection::OnWatchdog() {
  const int64_t now = Nanos(Clock::now());
  int64_t next = INT64_MAX;
  CloseReason expired = CloseReason::kNone;
  // One timeout: `since` is when its clock started (0 = not running: look again within half the
  // limit, since it may start right after this check).
  auto check = [&](int64_t limit_ns, int64_t since, CloseReason reason) {
    if (limit_ns <= 0) return;
    if (since != 0 && now - since >= limit_ns) expired = reason;
    next = std::min(next, since != 0 ? limit_ns - (now - since) : limit_ns / 2);
  };
  constexpr int64_t kMs = 1'000'000;
  check(int64_t{options_.idle_timeout_sec} * 1000 * kMs,
        last_activity_ns_.load(std::memory_order_relaxed), CloseReason::kIdleTimeout);
  check(int64_t{options_.read_timeout_ms} * kMs, partial_since_ns_.load(std::memory_order_relaxed),
        CloseReason::kReadTimeout);
  check(int64_t{options_.first_byte_timeout_ms} * kMs,
        read_any_.load(std::memory_order_relaxed) ? 0 : Nanos(created_at_),
        CloseReason::kFirstByteTimeout);
  check(int64_t{options_.write_timeout_ms} * kMs,
        write_blocked_since_ns_.load(std::memory_order_relaxed), CloseReason::kWriteTimeout);
  check(int64_t{options_.write_timeout_ms} * kMs,
        output_stalled_since_ns_.load(std::memory_order_relaxed), CloseReason::kWriteTimeout);
  if (expired != CloseReason::kNone) {
    CloseNow(expired);
    return;
  }
  std::lock_guard lock(mutex_);
  if (!closed()) ArmWatchdog(std::chrono::nanoseconds(std::max<int64_t>(next, 1'000'000)));
}

}  // namespace arenarpc::net
