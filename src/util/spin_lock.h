#pragma once
// SpinLock: a lock for critical sections of a few instructions that never block (copying a
// shared_ptr). Locking and unlocking inline to an exchange and a store, where a std::mutex is two
// calls into libpthread; a holder the OS preempted is waited for with yields, not busy spins.

#include <atomic>
#include <thread>

namespace arenarpc::util {

class SpinLock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
        if (spins >= kSpinsBeforeYield) std::this_thread::yield();
      }
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  static constexpr int kSpinsBeforeYield = 64;
  std::atomic<bool> locked_{false};
};

}  // namespace arenarpc::util
