#pragma once
// MessageMemoryBudget: the message memory of the calls in flight, server-wide, against a limit
// (ServerOptions::max_inflight_message_memory). A call charges what its request is estimated to
// hold before it is parsed and gives it back when its messages are released. When the memory in
// flight falls back to a quarter of a high-water mark of at least kTrimAfter, the releasing
// thread asks glibc to give its free pages back (malloc_trim), and once more when the last call
// in flight ends: glibc otherwise keeps the heap a spike grew.

#include <atomic>
#include <cstdint>
#include <utility>

namespace arenarpc::memory {

class MessageMemoryBudget {
 public:
  static constexpr uint64_t kTrimAfter = 32u << 20;

  // Bytes charged by one call; given back on destruction. Move-only.
  class Charge {
   public:
    Charge() = default;
    Charge(const Charge&) = delete;
    Charge& operator=(const Charge&) = delete;
    Charge(Charge&& other) noexcept { *this = std::move(other); }
    Charge& operator=(Charge&& other) noexcept {
      if (this != &other) {
        Return();
        budget_ = std::exchange(other.budget_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
      }
      return *this;
    }
    ~Charge() { Return(); }
    uint64_t bytes() const noexcept { return bytes_; }
    void Return() noexcept {
      if (MessageMemoryBudget* budget = std::exchange(budget_, nullptr)) budget->Return(bytes_);
      bytes_ = 0;
    }

   private:
    friend class MessageMemoryBudget;
    MessageMemoryBudget* budget_ = nullptr;
    uint64_t bytes_ = 0;
  };

  explicit MessageMemoryBudget(uint64_t limit = 0) : limit_(limit) {}
  void set_limit(uint64_t limit) noexcept { limit_.store(limit, std::memory_order_relaxed); }
  uint64_t limit() const noexcept { return limit_.load(std::memory_order_relaxed); }  // 0: none

  // Charges `bytes` unless that would take the memory in flight past the limit (a call alone is
  // always admitted when nothing else is in flight, so that one larger call is not starved).
  bool TryCharge(uint64_t bytes, Charge* charge) noexcept;

  uint64_t in_use() const noexcept { return in_use_.load(std::memory_order_relaxed); }
  uint64_t peak() const noexcept { return peak_.load(std::memory_order_relaxed); }
  uint64_t trims() const noexcept { return trims_.load(std::memory_order_relaxed); }

  // Rejections, counted by the server.
  std::atomic<uint64_t> rejected_too_large{0};  // EREQUEST: over max_request_memory
  std::atomic<uint64_t> rejected_in_flight{0};  // ELIMIT: over max_inflight_message_memory

 private:
  void Return(uint64_t bytes) noexcept;

  std::atomic<uint64_t> limit_;
  std::atomic<uint64_t> in_use_{0};
  std::atomic<uint64_t> peak_{0};        // highest in_use_ ever
  std::atomic<uint64_t> high_water_{0};  // highest in_use_ since the last trim
  std::atomic<uint64_t> trims_{0};
  std::atomic<bool> again_at_zero_{false};  // a trim ran with calls still in flight
};

}  // namespace arenarpc::memory
