#pragma once
// Connection: one TCP socket. Reads into BufferChain blocks from the I/O page pool and hands them
// to a Delegate (the protocol side); writes frames queued from any thread, whole and in call
// order, with gather I/O straight from the queued chains.
//
// Safe on an io_context that several threads run: one read is outstanding at a time (so the
// Delegate's OnInput never runs concurrently with itself), one thread flushes at a time, and the
// descriptor stays open until the last reference is gone (closing shuts the socket down), so no
// operation can reach a descriptor number the kernel has reused.
//
// Backpressure: reading pauses while unwritten output holds more memory than
// Options::max_unwritten_bytes (counted in pages, BufferChain::held_bytes) and resumes when it
// drained to half; small frames are copied into the tail page of the queue instead of each pinning
// a page of its own. The Delegate can pause reading for its own reasons (SetDelegateBlocked).

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "arenarpc/buffer_chain.h"

namespace arenarpc::net {

class TlsSession;

// Work a Delegate leaves to the connection, to run on the reading thread once reading has been
// re-armed (so that a long task does not keep the connection from being read by other threads).
class InputTask {
 public:
  virtual ~InputTask() = default;
  virtual void Run() = 0;
};

enum class CloseReason {
  kNone,            // still open
  kPeer,            // EOF or a socket error (close_error() says which)
  kLocal,           // Close() / CloseWhenFlushed() / the Delegate rejected the input
  kIdleTimeout,     // nothing read or written for idle_timeout_sec
  kReadTimeout,     // a started message did not complete within read_timeout_ms
  kFirstByteTimeout,  // nothing was read within first_byte_timeout_ms of the connection's start
  kWriteTimeout,    // queued bytes found no room in the socket (or the Delegate's output in the
                    // peer's flow-control windows) for write_timeout_ms
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using Clock = std::chrono::steady_clock;

  struct InputResult {
    bool keep_open = true;                // false: close the connection (input rejected)
    // Complete messages were left in the input (the Delegate is full): OnInput runs again on
    // them when reading resumes, before anything new is read.
    bool input_waits = false;
    std::unique_ptr<InputTask> run_next;  // run after reading was re-armed; may be null
    // The read timeout runs per message: it restarts when a message completed, and applies while
    // the input holds bytes or the Delegate took bytes of a message that has not completed.
    bool message_completed = false;   // at least one message was complete in this input
    bool message_in_progress = false;  // the Delegate holds part of a message outside `input`
    // The Delegate refused a message from its head and dropped its bytes, which were the last
    // of `input`: this many more of them are discarded as they arrive, unread where the socket
    // allows (plain TCP: recv(MSG_TRUNC) copies nothing).
    size_t skip_bytes = 0;
    // > 0: read at most about this many bytes before the next OnInput (the rest of a large
    // message and the head of the next, so the next can be refused before its body is read).
    size_t read_hint = 0;
  };

  // Protocol callbacks.
  class Delegate {
   public:
    virtual ~Delegate() = default;
    // Bytes read at `read_at` were appended to `input`: consume every complete message. Never
    // runs concurrently with itself for one connection.
    virtual InputResult OnInput(Connection& connection, BufferChain& input,
                                Clock::time_point read_at) = 0;
    // The connection closed (peer, error, timeout or Close()). Called exactly once, on any thread.
    virtual void OnClosed(Connection& connection) = 0;
    // TLS (StartTls) finished its handshake; the reading thread, before any plaintext is handed
    // over.
    virtual void OnTlsHandshakeDone(Connection& /*connection*/) {}
    // Unwritten output drained to max_unwritten_bytes / 2 after NotifyWhenDrained(); the
    // connection's executor, once per request.
    virtual void OnOutputDrained(Connection& /*connection*/) {}
  };

  struct Options {
    int idle_timeout_sec = -1;  // close after this long without reading or writing; -1 = never
    // Close when one message takes longer than this from its first byte (input left over, or
    // InputResult::message_in_progress) to its last; -1 = never.
    int read_timeout_ms = -1;
    // Close when not a byte was read this long after Start(); -1 = never.
    int first_byte_timeout_ms = -1;
    // Close when bytes wait to be written and the socket took none of them for this long (the
    // peer does not read), or the Delegate's output waited for the peer this long
    // (SetOutputStalled); -1 = never.
    int write_timeout_ms = -1;
    // Pause reading while unwritten output holds more than this many bytes of memory.
    size_t max_unwritten_bytes = SIZE_MAX;
    std::atomic<uint64_t>* read_pauses = nullptr;  // optional: counts times reading paused
    // optional: counts bytes of refused messages discarded unread (InputResult::skip_bytes)
    std::atomic<uint64_t>* bytes_discarded = nullptr;
  };

  // The socket must belong to the io_context the connection will run on.
  static std::shared_ptr<Connection> Create(asio::ip::tcp::socket socket,
                                            std::unique_ptr<Delegate> delegate,
                                            const Options& options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts reading (and the timeout watchdog). Any thread; call once.
  void Start();
  // Queues bytes (normally one whole frame) for writing. Any thread. Writes from several threads
  // never interleave; each call's bytes go out contiguously, in the order the calls returned.
  // Dropped silently once the connection is closed (the peer cannot receive them anyway).
  // end_offset: set, before any byte can be written, to bytes_queued() just after these bytes
  // (compare with bytes_written() to tell whether they all went out); past bytes_queued() when
  // they were dropped.
  void Write(BufferChain&& bytes, uint64_t* end_offset = nullptr);
  // Closes now. Any thread; idempotent. Queued, unwritten bytes are dropped.
  void Close();
  // Stops reading and closes once every byte queued so far (and any queued later) is written.
  void CloseWhenFlushed();
  // Follows the writes (rpcz: when a reply's bytes left). `watch(bytes_written(), closed)` runs
  // now, then on the writing thread after each write, until it returns true; once with closed =
  // true if the connection closes (or is destroyed) first. Runs under a mutex of its own: keep it
  // short. A connection nobody watches pays one relaxed load per write. Any thread.
  using WriteWatch = std::function<bool(uint64_t bytes_written, bool closed)>;
  void WatchWrites(WriteWatch watch);
  // Pauses (true) or resumes (false) reading for the Delegate's own reasons. Any thread.
  void SetDelegateBlocked(bool blocked);
  // The Delegate stopped producing output at max_unwritten_bytes: Delegate::OnOutputDrained runs
  // once unwritten output is down to half of it (soon, if it already is). Any thread.
  void NotifyWhenDrained();
  // The Delegate holds output the peer does not take (HTTP/2 flow-control windows): true starts
  // the write_timeout_ms clock unless it runs, false stops it. Any thread.
  void SetOutputStalled(bool stalled) noexcept;
  // Runs TLS under the connection from here on (net/tls_session.h): the bytes in the input (which
  // OnInput must leave there) and every byte read later are records, OnInput gets plaintext,
  // Write() takes plaintext. Call from OnInput, or before Start() on the connection's executor
  // (a client, which calls session->StartHandshake() first). Once.
  void StartTls(std::unique_ptr<TlsSession> session);
  // nullptr on a clear-text connection.
  const TlsSession* tls() const noexcept { return tls_.get(); }
  // Why TLS closed the connection (a failed handshake or a bad record); empty otherwise. Read it
  // from OnClosed or later.
  std::string tls_error() const;

  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  CloseReason close_reason() const noexcept { return close_reason_.load(std::memory_order_acquire); }
  // Memory that bytes queued and not yet accepted by the kernel pin (whole pages).
  size_t unwritten_held_bytes() const noexcept {
    return pending_held_.load(std::memory_order_relaxed) +
           writing_held_.load(std::memory_order_relaxed);
  }
  // Bytes the kernel accepted so far (monotonic). The client uses it to tell requests that were
  // completely written from those cut off by a broken connection.
  uint64_t bytes_written() const noexcept { return bytes_written_.load(std::memory_order_acquire); }
  // Bytes handed to Write() so far, by every writer (monotonic; bytes dropped at a close count).
  uint64_t bytes_queued() const noexcept { return bytes_queued_.load(std::memory_order_acquire); }
  // Why the socket failed (eof, connection_reset, ...); empty after a local close or a timeout.
  // Read it from OnClosed or later.
  asio::error_code close_error() const;
  uint64_t id() const noexcept { return id_; }
  Clock::time_point created_at() const noexcept { return created_at_; }
  const std::string& remote_side() const noexcept { return remote_side_; }  // "ip:port"
  const std::string& local_side() const noexcept { return local_side_; }    // "ip:port"
  Delegate& delegate() noexcept { return *delegate_; }
  const Delegate& delegate() const noexcept { return *delegate_; }
  asio::io_context::executor_type executor() noexcept;

 private:
  enum ReadBlock : uint32_t { kOutputFull = 1, kDelegateBlocked = 2, kClosing = 4 };

  Connection(asio::ip::tcp::socket socket, std::unique_ptr<Delegate> delegate,
             const Options& options);
  void ArmRead();
  // `readable`: woken by a wait for readability (nothing read yet), not by a read.
  void OnRead(const asio::error_code& error, size_t bytes, bool readable = false);
  // Non-blocking reads into input_ (one round's worth); true if the socket may hold more.
  bool ReadAvailable(size_t* read_now, asio::error_code* error);
  // Discards skip_bytes_ the socket holds without reading them (plain TCP); true if all are gone.
  bool DiscardSkipped(size_t* read_now, asio::error_code* error);
  // Drops skip_bytes_ from the front of input_ (bytes read, or decrypted, before they could be
  // discarded unread).
  void DropSkipped();
  void ContinueReading(bool input_waits);  // the reading thread, after OnInput
  void ResumeReading();                    // OnInput on what is buffered, then read on
  void Unblock(uint32_t reason);           // clears a ReadBlock bit; re-arms reading if it may
  void Flush();                            // the one flushing thread
  bool TakePending();                      // flusher: pending_ -> writing_; false = nothing left
  void CloseNow(CloseReason reason, const asio::error_code& error = {});
  void ArmWatchdog(Clock::duration after);  // mutex_ held
  void OnWatchdog();
  void Touch() noexcept;                   // records activity for the idle timeout
  void PostDrained();                      // runs OnOutputDrained if NotifyWhenDrained asked
  void RunWriteWatches(bool closed);       // WatchWrites' callbacks; drops those that are done
  BufferChain& read_target() noexcept { return tls_ ? ciphertext_in_ : input_; }
  // TLS: encrypts what the flusher took into writing_ (closes the connection if TLS fails).
  void EncryptTaken(BufferChain& plaintext);
  // TLS: makes a thread flush when records or (after the handshake) plaintext wait.
  void RequestFlush();
  void FailTls();  // the reading thread: sends TLS's alert, then closes

  asio::ip::tcp::socket socket_;
  std::unique_ptr<Delegate> delegate_;
  const Options options_;
  const uint64_t id_;
  const Clock::time_point created_at_ = Clock::now();
  std::string remote_side_, local_side_;

  BufferChain input_;    // the reading thread only
  size_t skip_bytes_ = 0;  // the reading thread: InputResult::skip_bytes still to come
  size_t read_hint_ = 0;   // the reading thread: the last InputResult::read_hint
  BufferChain writing_;  // the flushing thread only: bytes being written now

  // TLS (StartTls): set once by the reading thread (under mutex_), before any write needs it.
  std::unique_ptr<TlsSession> tls_;
  BufferChain ciphertext_in_;  // the reading thread: records read and not yet decrypted
  // The flushing thread: (ciphertext offset, plaintext offset) at the end of each record queued
  // and not yet written, so bytes_written() counts plaintext the peer can decrypt.
  std::deque<std::pair<uint64_t, uint64_t>> tls_marks_;
  uint64_t ciphertext_queued_ = 0, ciphertext_written_ = 0, plaintext_encrypted_ = 0;

  mutable std::mutex mutex_;  // guards everything below up to the atomics, and the timer
  BufferChain pending_;       // queued by Write(), not yet moved to writing_
  bool write_active_ = false; // a thread flushes, or waits for writability
  bool reading_ = false;      // a read is armed or its handler runs
  uint32_t read_blocks_ = 0;  // ReadBlock bits; reading is re-armed only when 0
  size_t armed_read_space_ = 0;  // the buffer the armed read may fill (its handler's thread only)
  bool close_when_flushed_ = false;
  asio::error_code close_error_;
  std::string tls_error_;
  asio::steady_timer watchdog_;

  std::atomic<bool> closed_{false};
  std::atomic<CloseReason> close_reason_{CloseReason::kNone};
  std::atomic<size_t> pending_held_{0}, writing_held_{0};
  std::atomic<uint64_t> bytes_written_{0};
  std::atomic<uint64_t> bytes_queued_{0};  // written under mutex_
  std::atomic<int64_t> last_activity_ns_{0};   // steady clock
  std::atomic<int64_t> partial_since_ns_{0};   // 0 = no message started and incomplete
  std::atomic<int64_t> write_blocked_since_ns_{0};  // 0 = not waiting for the socket's room
  std::atomic<int64_t> output_stalled_since_ns_{0};  // 0 = the Delegate's output is not stalled
  std::atomic<bool> drained_wanted_{false};         // NotifyWhenDrained() waits
  std::atomic<bool> watched_{false};                // write_watches_ is not empty
  std::mutex watch_mutex_;
  std::vector<WriteWatch> write_watches_;
  std::atomic<bool> read_any_{false};               // a byte was read
};

}  // namespace arenarpc::net
