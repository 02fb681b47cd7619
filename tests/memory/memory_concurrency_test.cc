// Many threads acquiring and releasing, with pairs released on a different thread than they were
// acquired on (async handlers). Runs under ThreadSanitizer (label "concurrency").
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/memory/cached_page_allocator.h"
#include "arenarpc/memory/message_memory.h"
#include "echo/payload_generator.h"

namespace arenarpc::memory {
namespace {

using example::EchoRequest;
using example::EchoResponse;

constexpr int kThreads = 4;
constexpr int kCallsPerThread = 96;

// A tiny MPMC queue to hand pairs to another thread.
class PairQueue {
 public:
  void Push(MessagePair pair) {
    {
      std::lock_guard lock(mu_);
      pairs_.push_back(std::move(pair));
    }
    cv_.notify_one();
  }
  bool Pop(MessagePair& out) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !pairs_.empty() || closed_; });
    if (pairs_.empty()) return false;
    out = std::move(pairs_.front());
    pairs_.pop_front();
    return true;
  }
  void Close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<MessagePair> pairs_;
  bool closed_ = false;
};

class StrategyConcurrency : public ::testing::TestWithParam<const char*> {};

TEST_P(StrategyConcurrency, AcquireHereReleaseThere) {
  MemoryOptions options;
  options.page_cache_capacity = 256;
  options.thread_cache_pages = 16;
  options.reuse.max_pooled_objects = 6;
  auto memory = MakeMessageMemory(GetParam(), options, nullptr);
  auto method = memory->Bind(EchoRequest::default_instance(), EchoResponse::default_instance());

  // Blocks of 16 calls of ~10-byte requests, then of ~1 KB ones: reuse's running mean of call
  // sizes crosses min_call_bytes both ways, so its arena and its pools serve calls at once.
  std::vector<std::string> wires;
  for (int i = 0; i < 8; ++i) {
    EchoRequest r;
    example::PayloadGenerator(i < 4 ? 1 : 3, i + 1).Fill(&r);
    wires.push_back(r.SerializeAsString());
  }
  PairQueue queue;
  std::atomic<int> mismatches{0};
  std::vector<std::thread> releasers;
  for (int i = 0; i < 2; ++i) {
    releasers.emplace_back([&] {
      MessagePair pair;
      while (queue.Pop(pair)) {
        auto& request = static_cast<EchoRequest&>(*pair.request());
        auto& response = static_cast<EchoResponse&>(*pair.response());
        if (response.payload().SerializeAsString() != request.payload().SerializeAsString()) {
          ++mismatches;
        }
        pair.Release();  // on another thread than Acquire
      }
    });
  }
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < kCallsPerThread; ++i) {
        MessagePair pair = method->Acquire();
        SerializedSpan bytes(wires[((i / 16) % 2) * 4 + (t + i) % 4]);
        if (pair.ParseRequest(bytes) != ParseResult::kOk) ++mismatches;
        auto& request = static_cast<EchoRequest&>(*pair.request());
        auto& response = static_cast<EchoResponse&>(*pair.response());
        response.mutable_payload()->CopyFrom(request.payload());
        pair.PrepareResponse();
        (void)response.ByteSizeLong();  // what serializing it would leave behind
        if (i % 2 == 0) {
          queue.Push(std::move(pair));
        }  // else released here by the destructor
        if (i % 16 == 0) (void)memory->stats();  // readable at any time
      }
    });
  }
  for (auto& c : callers) c.join();
  queue.Close();
  for (auto& r : releasers) r.join();

  EXPECT_EQ(mismatches.load(), 0);
  const MemoryStats s = memory->stats();
  EXPECT_EQ(s.acquired, static_cast<uint64_t>(kThreads * kCallsPerThread));
  EXPECT_EQ(s.released, s.acquired);
  EXPECT_EQ(s.pages_outstanding, 0u);
  EXPECT_LE(s.pages_cached, options.page_cache_capacity);
  EXPECT_LE(s.objects_pooled, 2 * options.reuse.max_pooled_objects);  // two pools (types)
  if (std::string(GetParam()) == "reuse") {
    EXPECT_GT(s.calls_on_arena, 0u);
    EXPECT_GT(s.reuses, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(All, StrategyConcurrency,
                         ::testing::Values("heap", "arena", "paged", "reuse"));

void CrossThreadFreesKeepCountsAndCapacity(const PagePoolOptions& options) {
  CachedPageAllocator pages(options);
  constexpr int kPerThread = 2000;
  std::vector<std::vector<void*>> produced(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        void* p = pages.Allocate();
        static_cast<char*>(p)[i % 4096] = static_cast<char>(i);
        if (i % 3 == 0) {
          pages.Deallocate(p);
        } else {
          produced[t].push_back(p);
        }
        if (i % 256 == 0) {
          EXPECT_LE(pages.stats().pages_cached, 64u);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  threads.clear();
  // Every thread frees pages that another thread allocated.
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (void* p : produced[(t + 1) % kThreads]) pages.Deallocate(p);
    });
  }
  for (auto& th : threads) th.join();
  const PageAllocatorStats s = pages.stats();
  EXPECT_EQ(s.allocations, static_cast<uint64_t>(kThreads * kPerThread));
  EXPECT_EQ(s.cache_hits + s.cache_misses, s.allocations);
  EXPECT_EQ(s.pages_outstanding, 0u);
  EXPECT_LE(s.pages_cached, 64u);
}

TEST(CachedPageAllocatorConcurrency, CrossThreadFreesKeepCountsAndCapacity) {
  CrossThreadFreesKeepCountsAndCapacity({4096, 64, 8});
}

// Idle pages released while other threads allocate, free and spill (TSan: no race).
TEST(CachedPageAllocatorConcurrency, IdleReleaseRacesNothing) {
  CrossThreadFreesKeepCountsAndCapacity({4096, 64, 8, std::chrono::milliseconds(1)});
}

// A thread keeps pages of an allocator in its cache after the allocator is destroyed; they go back
// when the thread next creates a cache or exits (ASan/LSan would flag a leak, TSan a race).
TEST(CachedPageAllocatorConcurrency, OutlivingThreadCachesHandPagesBack) {
  auto first = std::make_unique<CachedPageAllocator>(PagePoolOptions{4096, 32, 8});
  std::mutex mu;
  std::condition_variable cv;
  int stage = 0;
  std::thread worker([&] {
    std::vector<void*> pages;
    for (int i = 0; i < 8; ++i) pages.push_back(first->Allocate());
    for (void* p : pages) first->Deallocate(p);  // now cached by this thread
    {
      std::unique_lock lock(mu);
      stage = 1;
      cv.notify_all();
      cv.wait(lock, [&] { return stage == 2; });
    }
    CachedPageAllocator second({4096, 32, 8});  // sweeps the dead allocator's cache
    void* p = second.Allocate();
    second.Deallocate(p);
    EXPECT_EQ(second.stats().pages_outstanding, 0u);
  });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return stage == 1; });
    EXPECT_EQ(first->stats().pages_cached, 8u);
    EXPECT_EQ(first->stats().pages_outstanding, 0u);
    first.reset();
    stage = 2;
    cv.notify_all();
  }
  worker.join();
}

}  // namespace
}  // namespace arenarpc::memory
