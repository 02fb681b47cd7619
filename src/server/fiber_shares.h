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

  // Holds one fiber's counts; move-only, gives them back when destroyed.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept;
    Ticket& operator=(Ticket&& other) noexcept;
    ~Ticket();
    explicit operator bool() const noexcept { return connection_ != nullptr; }

   private:
    friend class FiberShares;
    void Release() noexcept;
    FiberShares* shares_ = nullptr;
    std::shared_ptr<Connection> connection_;
    bool streaming_ = false;
  };

  explicit FiberShares(Limits limits) : limits_(limits) {}
  // ServerOptions' max_fibers_per_connection, max_streaming_fibers and
  // max_streaming_calls_per_connection with their defaults applied (options already validated).
  static Limits LimitsFor(const ServerOptions& options);

  // A ticket for one more handler fiber of `connection` (never null); empty, with *refusal
  // naming the option reached, when a share is full.
  Ticket TryTake(const std::shared_ptr<Connection>& connection, bool streaming,
                 std::string* refusal);

  int streaming() const noexcept { return streaming_.load(std::memory_order_relaxed); }
  const Limits& limits() const noexcept { return limits_; }

 private:
  const Limits limits_;
  std::atomic<int> streaming_{0};
};

}  // namespace arenarpc::server
