#pragma once
// FiberShares: the parts of max_fibers one connection, and all streaming calls together, may hold
// (docs/server.md, "Execution"). A handler's fiber takes a Ticket before it is reserved and gives
// it back when the fiber ends:
//   - streaming calls (a gRPC streaming handler holds its fiber for the whole stream) hold at most
//     `streaming` fibers in all and `streaming_per_connection` on one connection, so idle streams
//     cannot take the fibers unary calls need;
//   - every handler fiber of one connection counts against `per_connection` (0: no such share).
// A refusal says which option it reached.

#include <atomic>
#include <memory>
#include <string>
#include <utility>

namespace arenarpc {
struct ServerOptions;
}

namespace arenarpc::server {

class FiberShares {
 public:
  struct Limits {
    int per_connection = 0;            // 0 = none
    int streaming = 0;                 // > 0
    int streaming_per_connection = 0;  // > 0
  };
  // What one connection's handler fibers hold; kept by the connection and by its tickets.
  struct Connection {
    std::atomic<int> fibers{0};
    std::atomic<int> streaming{0};
  };

  // Holds one fiber's counts; move-only, gives them back when destroyed. Inline: every call's
  // handler fiber takes one.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept
        : shares_(std::exchange(other.shares_, nullptr)),
          connection_(std::move(other.connection_)),
          streaming_(std::exchange(other.streaming_, false)) {}
    Ticket& operator=(Ticket&& other) noexcept {
      if (this != &other) {
        Release();
        shares_ = std::exchange(other.shares_, nullptr);
        connection_ = std::move(other.connection_);
        streaming_ = std::exchange(other.streaming_, false);
      }
      return *this;
    }
    ~Ticket() { Release(); }
    explicit operator bool() const noexcept { return connection_ != nullptr; }

   private:
    friend class FiberShares;
    Ticket(FiberShares* shares, std::shared_ptr<Connection> connection) noexcept
        : shares_(shares), connection_(std::move(connection)) {}
    void Release() noexcept {
      if (!connection_) return;
      connection_->fibers.fetch_sub(1, std::memory_order_relaxed);
      if (streaming_) ReleaseStreaming();
      connection_.reset();
      shares_ = nullptr;
    }
    void ReleaseStreaming() noexcept;
    FiberShares* shares_ = nullptr;
    std::shared_ptr<Connection> connection_;
    bool streaming_ = false;
  };

  explicit FiberShares(Limits limits) : limits_(limits) {}
  // ServerOptions' max_fibers_per_connection, max_streaming_fibers and
  // max_streaming_calls_per_connection with their defaults applied (options already validated).
  static Limits LimitsFor(const ServerOptions& options);

  // A ticket for one more handler fiber of `connection` (never null); empty, with *refusal
  // naming the option reached, when a share is full. A unary call without a per-connection
  // share (the default) only counts.
  Ticket TryTake(std::shared_ptr<Connection> connection, bool streaming, std::string* refusal) {
    if (limits_.per_connection <= 0 && !streaming) {
      connection->fibers.fetch_add(1, std::memory_order_relaxed);
      return Ticket(this, std::move(connection));
    }
    return TryTakeLimited(std::move(connection), streaming, refusal);
  }

  int streaming() const noexcept { return streaming_.load(std::memory_order_relaxed); }
  const Limits& limits() const noexcept { return limits_; }

 private:
  Ticket TryTakeLimited(std::shared_ptr<Connection> connection, bool streaming,
                        std::string* refusal);

  const Limits limits_;
  std::atomic<int> streaming_{0};
};

}  // namespace arenarpc::server
