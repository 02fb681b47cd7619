#pragma once
// StreamCounters: one open stream's traffic, updated by the stream's code with relaxed atomics
// (no lock, no allocation per message) and read by observers at any time (StreamRegistry).

#include <atomic>
#include <cstdint>

namespace arenarpc::stream {

struct StreamCounters {
  static constexpr auto kRelaxed = std::memory_order_relaxed;

  void Received(uint64_t bytes) noexcept {
    messages_in.fetch_add(1, kRelaxed);
    bytes_in.fetch_add(bytes, kRelaxed);
  }
  void Sent(uint64_t bytes) noexcept {
    messages_out.fetch_add(1, kRelaxed);
    bytes_out.fetch_add(bytes, kRelaxed);
  }
  void SetBufferedIn(uint64_t bytes) noexcept { buffered_in.store(bytes, kRelaxed); }
  void SetBufferedOut(uint64_t bytes) noexcept { buffered_out.store(bytes, kRelaxed); }

  std::atomic<uint64_t> messages_in{0}, bytes_in{0};
  std::atomic<uint64_t> messages_out{0}, bytes_out{0};
  std::atomic<uint64_t> buffered_in{0}, buffered_out{0};  // stats::StreamInfo says what they hold
};

}  // namespace arenarpc::stream
