#pragma once
// ThreadCpuTimer: the thread CPU time (CLOCK_THREAD_CPUTIME_ID) a stretch of work took, valid only
// if the work ran start to end on one thread with nothing else in between: the same thread, and
// no fiber run slice ended there meanwhile (util/thread_slice.h). Work that suspended, moved to
// another thread or finished later from somewhere else is not timed.
#include <pthread.h>

#include <cstdint>
#include <ctime>
#include <optional>

#include "util/thread_slice.h"

namespace arenarpc::util {

class ThreadCpuTimer {
 public:
  static uint64_t Now() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
  }

  void Start() noexcept {
    thread_ = pthread_self();
    slices_ = ThreadSliceCount();
    start_ns_ = Now();
  }
  bool started() const noexcept { return start_ns_ != 0; }
  // Whether the work is still on the thread and alone since Start().
  bool Unbroken() const noexcept {
    return started() && pthread_equal(thread_, pthread_self()) && slices_ == ThreadSliceCount();
  }
  // The CPU since Start(), or nullopt when the work did not stay alone on its thread.
  std::optional<uint64_t> Elapsed() const noexcept {
    if (!Unbroken()) return std::nullopt;
    return Now() - start_ns_;
  }

 private:
  pthread_t thread_{};
  uint64_t slices_ = 0;
  uint64_t start_ns_ = 0;
};

}  // namespace arenarpc::util
