// The fiber runtime without a server: a Scheduler over an io_context run by a few threads.
#include <gtest/gtest.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "arenarpc/fiber.h"
#include "fiber/scheduler.h"
#include "fiber_runtime.h"

namespace arenarpc::fiber {
namespace {

using namespace std::chrono_literals;

TEST(FiberTest, RunsBodiesOnFibersAndCountsThemLive) {
  Runtime runtime(2);
  Event done;
  std::atomic<bool> in_fiber{false};
  ASSERT_TRUE(runtime.Spawn([&] {
    in_fiber = InFiber();
    done.Set();
  }));
  done.Wait();  // a plain thread waits for an event a fiber sets
  EXPECT_TRUE(in_fiber.load());
  EXPECT_FALSE(InFiber());
  runtime.scheduler().WaitIdle();
  EXPECT_EQ(runtime.scheduler().live(), 0);
}

TEST(FiberTest, SleepingFibersDoNotHoldTheirThread) {
  // One thread, 200 fibers sleeping 50 ms each: blocking sleeps would take 10 s.
  Runtime runtime(1);
  constexpr int kFibers = 200;
  std::atomic<int> woke{0};
  const auto start = Clock::now();
  for (int i = 0; i < kFibers; ++i) {
    ASSERT_TRUE(runtime.Spawn([&] {
      const auto before = Clock::now();
      SleepFor(50ms);
      if (Clock::now() - before >= 50ms) woke.fetch_add(1);
    }));
  }
  runtime.scheduler().WaitIdle();
  EXPECT_EQ(woke.load(), kFibers);  // each slept at least its time
  EXPECT_LT(Clock::now() - start, 2s);
}

TEST(FiberTest, MutexExcludesFibersThatMoveBetweenThreads) {
  Runtime runtime(3);
  Mutex mutex;
  int counter = 0;  // guarded by mutex; a data race here is what TSan would report
  constexpr int kFibers = 16, kRounds = 200;
  for (int f = 0; f < kFibers; ++f) {
    ASSERT_TRUE(runtime.Spawn([&] {
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard lock(mutex);
        const int seen = counter;
        Yield();  // suspend while holding the mutex: the others must wait, not enter
        counter = seen + 1;
      }
    }));
  }
  runtime.scheduler().WaitIdle();
  EXPECT_EQ(counter, kFibers * kRounds);
}

TEST(FiberTest, ConditionVariableBetweenFibersAndThreads) {
  Runtime runtime(2);
  Mutex mutex;
  ConditionVariable cv;
  int stage = 0;
  ASSERT_TRUE(runtime.Spawn([&] {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return stage == 1; });  // set by the test thread
    stage = 2;
    cv.notify_all();
  }));
  {
    std::lock_guard lock(mutex);
    stage = 1;
  }
  cv.notify_all();
  std::unique_lock lock(mutex);
  EXPECT_TRUE(cv.wait_for(lock, 5s, [&] { return stage == 2; }));  // a thread waits on a fiber
}

TEST(FiberTest, ConditionVariableWaitTimesOutOnFibersAndThreads) {
  Runtime runtime(1);
  std::mutex mutex;  // any BasicLockable
  ConditionVariable cv;
  std::atomic<int> timeouts{0};
  ASSERT_TRUE(runtime.Spawn([&] {
    std::unique_lock lock(mutex);
    const auto before = Clock::now();
    if (cv.wait_for(lock, 30ms) == std::cv_status::timeout && Clock::now() - before >= 30ms) {
      timeouts.fetch_add(1);
    }
  }));
  {
    std::unique_lock lock(mutex);
    if (cv.wait_for(lock, 30ms) == std::cv_status::timeout) timeouts.fetch_add(1);
  }
  runtime.scheduler().WaitIdle();
  EXPECT_EQ(timeouts.load(), 2);
  // A timed-out waiter left the queue: a later notify_one wakes the live waiter, not a stale one.
  std::atomic<bool> woken{false};
  ASSERT_TRUE(runtime.Spawn([&] {
    std::unique_lock lock(mutex);
    cv.wait(lock);
    woken = true;
  }));
  while (!woken) {
    cv.notify_one();
    std::this_thread::sleep_for(1ms);
  }
  runtime.scheduler().WaitIdle();
}

TEST(FiberTest, EventWaitForTimesOut) {
  Runtime runtime(1);
  Event event;
  std::atomic<int> result{-1};
  ASSERT_TRUE(runtime.Spawn([&] { result = event.WaitFor(20ms) ? 1 : 0; }));
  runtime.scheduler().WaitIdle();
  EXPECT_EQ(result.load(), 0);
  event.Set();
  EXPECT_TRUE(event.WaitFor(1ms));
}

TEST(FiberTest, AsyncRunsOnAnotherFiberAndFutureCarriesValuesAndExceptions) {
  Runtime runtime(2);
  Promise<int> outcome;
  Future<int> result = outcome.get_future();
  ASSERT_TRUE(runtime.Spawn([&] {
    const Fiber* const self = CurrentFiber();
    auto other = Async([self] {
      SleepFor(10ms);
      return CurrentFiber() != self && CurrentFiber() != nullptr ? 40 : -1000;
    });
    auto failing = Async([]() -> int { throw std::runtime_error("backend failed"); });
    int value = other.get() + 2;
    try {
      failing.get();
    } catch (const std::runtime_error& e) {
      if (std::string(e.what()) == "backend failed") value += 100;
    }
    outcome.set_value(value);
  }));
  EXPECT_EQ(result.get(), 142);
  // Outside fibers Async runs the function before returning.
  EXPECT_EQ(Async([] { return InFiber() ? 1 : 2; }).get(), 2);
}

struct Counted {
  static inline std::atomic<int> live{0};
  int value = 0;
  Counted() { live.fetch_add(1); }
  ~Counted() { live.fetch_sub(1); }
};

TEST(FiberTest, FiberLocalIsPerFiberAcrossThreadsAndDestroyedAtExit) {
  static FiberLocal<Counted> local;
  Runtime runtime(2);
  constexpr int kFibers = 20;
  std::atomic<int> consistent{0};
  for (int f = 0; f < kFibers; ++f) {
    ASSERT_TRUE(runtime.Spawn([&, f] {
      local->value = f;
      for (int i = 0; i < 20; ++i) Yield();  // moves between the two threads
      if (local->value == f) consistent.fetch_add(1);
    }));
  }
  runtime.scheduler().WaitIdle();
  EXPECT_EQ(consistent.load(), kFibers);
  EXPECT_EQ(Counted::live.load(), 0);  // every fiber's value was destroyed with it
  local->value = 7;                    // a plain thread has its own
  EXPECT_EQ(Counted::live.load(), 1);
}

TEST(FiberTest, MaxFibersBoundsLiveFibers) {
  Scheduler::Options options;
  options.max_fibers = 3;
  Runtime runtime(1, options);
  Event release;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(runtime.Spawn([&] { release.Wait(); }));
  EXPECT_FALSE(runtime.Spawn([] {}));  // a fourth is refused while three are live
  EXPECT_EQ(runtime.scheduler().live(), 3);
  release.Set();
  runtime.scheduler().WaitIdle();
  EXPECT_TRUE(runtime.Spawn([] {}));
}

TEST(FiberTest, StartFromAFiberUsesTheSameScheduler) {
  Runtime runtime(2);
  Event child_ran;
  std::atomic<bool> started{false}, outside{true};
  ASSERT_TRUE(runtime.Spawn([&] { started = Start([&] { child_ran.Set(); }); }));
  EXPECT_TRUE(child_ran.WaitFor(5s));
  runtime.scheduler().WaitIdle();
  EXPECT_TRUE(started.load());
  outside = Start([] {});
  EXPECT_FALSE(outside.load());  // not on a fiber: nothing to start it on
}

#if !defined(ARENARPC_SANITIZED)
int Recurse(volatile char* previous, int depth) {
  volatile char frame[1024];
  frame[0] = previous != nullptr ? previous[0] : 1;
  return depth > 1'000'000 ? frame[0] : Recurse(frame, depth + 1) + frame[0];
}

TEST(FiberDeathTest, StackOverflowHitsTheGuardPage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Scheduler::Options options;
        options.stack_size = 64 << 10;
        Runtime runtime(1, options);
        runtime.Spawn([] { Recurse(nullptr, 0); });
        runtime.scheduler().WaitIdle();
      },
      "");
}
#endif

}  // namespace
}  // namespace arenarpc::fiber
