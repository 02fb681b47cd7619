#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/memory/cached_page_allocator.h"
#include "arenarpc/memory/page_allocator.h"

namespace arenarpc::memory {
namespace {

TEST(PagePoolOptions, RejectsInvalidSettingsWithClearError) {
  for (size_t bad : {size_t{0}, size_t{100}, size_t{3000}, size_t{128}, size_t{2} << 20}) {
    std::string error;
    EXPECT_EQ(-1, ValidatePagePoolOptions({bad, 16, 4}, &error)) << "page_size " << bad;
    EXPECT_NE(error.find("page_size " + std::to_string(bad)), std::string::npos) << error;
  }
  std::string error;
  EXPECT_EQ(-1, ValidatePagePoolOptions({4096, 0, 0}, &error));
  EXPECT_NE(error.find("capacity_pages must be >= 1"), std::string::npos) << error;
  EXPECT_EQ(-1, ValidatePagePoolOptions({4096, 8, 9}, &error));
  EXPECT_NE(error.find("thread_cache_pages (9)"), std::string::npos) << error;
  EXPECT_EQ(-1, ValidatePagePoolOptions({4096, 8, 4, std::chrono::milliseconds(-1)}, &error));
  EXPECT_NE(error.find("idle_release must be 0 (keep idle pages) .. 2147483647 ms, not -1 ms"),
            std::string::npos)
      << error;
  EXPECT_EQ(-1, ValidatePagePoolOptions(
                    {4096, 8, 4, std::chrono::milliseconds(int64_t{1} << 40)}, &error));
  EXPECT_EQ(0, ValidatePagePoolOptions({4096, 8, 4, std::chrono::milliseconds(2147483647)}, &error));
  error.clear();
  std::unique_ptr<PageAllocator> pages;
  EXPECT_NO_THROW(pages = MakeSystemPageAllocator(1000, &error));
  EXPECT_EQ(pages, nullptr);
  EXPECT_NE(error.find("page_size 1000"), std::string::npos) << error;
  error.clear();
  EXPECT_NO_THROW(pages = MakeCachedPageAllocator({4096, 0, 0}, &error));
  EXPECT_EQ(pages, nullptr);
  EXPECT_NE(error.find("capacity_pages"), std::string::npos) << error;
  // A constructor has no return value: it throws what the factory reports.
  EXPECT_THROW(CachedPageAllocator({4096, 0, 0}), std::invalid_argument);
  error.clear();
  EXPECT_EQ(0, ValidatePagePoolOptions({256, 1, 0}, &error));
  EXPECT_EQ(0, ValidatePagePoolOptions({1 << 20, 8, 8}, &error));
  EXPECT_EQ(error, "");
  EXPECT_NE(MakeCachedPageAllocator({4096, 4, 2}, &error), nullptr);
}

// The throwing spellings, deprecated for one release.
TEST(PagePoolOptions, DeprecatedThrowingSpellingsStillThrow) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  EXPECT_THROW(ValidatePagePoolOptions({4096, 0, 0}), std::invalid_argument);
  EXPECT_THROW(MakeSystemPageAllocator(1000), std::invalid_argument);
  EXPECT_THROW(MakeCachedPageAllocator({4096, 8, 9}), std::invalid_argument);
  EXPECT_NO_THROW(ValidatePagePoolOptions({256, 1, 0}));
#pragma GCC diagnostic pop
}

TEST(SystemPageAllocator, CountsAndAlignment) {
  auto pages = MakeSystemPageAllocator(8192, nullptr);
  EXPECT_EQ(pages->page_size(), 8192u);
  void* a = pages->Allocate();
  void* b = pages->Allocate();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 16, 0u);
  std::memset(a, 0xab, 8192);  // the whole page is usable (ASan checks the bounds)
  EXPECT_EQ(pages->stats().allocations, 2u);
  EXPECT_EQ(pages->stats().pages_outstanding, 2u);
  pages->Deallocate(a);
  pages->Deallocate(b);
  EXPECT_EQ(pages->stats().pages_outstanding, 0u);
  EXPECT_EQ(pages->stats().pages_cached, 0u);
}

TEST(CachedPageAllocator, ReusesFreedPagesAndCounts) {
  CachedPageAllocator pages({4096, 64, 8});
  void* first = pages.Allocate();
  std::memset(first, 1, 4096);
  EXPECT_EQ(pages.stats().cache_misses, 1u);
  // A miss takes a batch (thread_cache_pages / 2) from the system: the rest stays cached.
  EXPECT_EQ(pages.stats().pages_cached, 3u);
  pages.Deallocate(first);
  EXPECT_EQ(pages.stats().pages_cached, 4u);
  EXPECT_EQ(pages.stats().pages_outstanding, 0u);
  void* again = pages.Allocate();
  EXPECT_EQ(again, first);  // LIFO thread cache
  PageAllocatorStats s = pages.stats();
  EXPECT_EQ(s.allocations, 2u);
  EXPECT_EQ(s.cache_hits, 1u);
  EXPECT_EQ(s.cache_misses, 1u);
  EXPECT_EQ(s.pages_outstanding, 1u);
  EXPECT_EQ(s.pages_cached, 3u);
  // The batch's pages are served before the system is asked again.
  std::vector<void*> more;
  for (int i = 0; i < 3; ++i) more.push_back(pages.Allocate());
  EXPECT_EQ(pages.stats().cache_misses, 1u);
  more.push_back(pages.Allocate());
  EXPECT_EQ(pages.stats().cache_misses, 2u);
  for (void* p : more) {
    std::memset(p, 2, 4096);  // every page of a batch is a whole page (ASan checks the bounds)
    pages.Deallocate(p);
  }
  pages.Deallocate(again);
}

TEST(CachedPageAllocator, NeverCachesMoreThanCapacity) {
  for (size_t thread_cache : {size_t{0}, size_t{4}, size_t{16}}) {
    CachedPageAllocator pages({4096, 16, thread_cache});
    std::vector<void*> held;
    for (int i = 0; i < 100; ++i) held.push_back(pages.Allocate());
    EXPECT_EQ(pages.stats().pages_outstanding, 100u);
    for (void* p : held) {
      pages.Deallocate(p);
      EXPECT_LE(pages.stats().pages_cached, 16u);
    }
    PageAllocatorStats s = pages.stats();
    EXPECT_EQ(s.pages_outstanding, 0u);
    EXPECT_EQ(s.pages_cached, 16u) << "thread_cache " << thread_cache;
    // The cache serves the next allocations.
    held.clear();
    const uint64_t hits = pages.stats().cache_hits;
    for (int i = 0; i < 16; ++i) held.push_back(pages.Allocate());
    EXPECT_EQ(pages.stats().cache_hits, hits + 16);
    for (void* p : held) pages.Deallocate(p);
  }
}

// Allocates and frees one page kOps times: served by the thread cache, without touching the
// shared stack, and enough operations for the pool to look at the clock.
void CycleOnePage(CachedPageAllocator& pages) {
  for (int i = 0; i < 64; ++i) pages.Deallocate(pages.Allocate());
}

std::vector<void*> AllocateMany(CachedPageAllocator& pages, int n) {
  std::vector<void*> held;
  for (int i = 0; i < n; ++i) held.push_back(pages.Allocate());
  return held;
}

TEST(CachedPageAllocator, PagesNoAllocationTookForAnIntervalGoBack) {
  using std::chrono::milliseconds;
  CachedPageAllocator pages({4096, 256, 8, milliseconds(50)});
  for (void* p : AllocateMany(pages, 200)) pages.Deallocate(p);  // a burst
  ASSERT_EQ(pages.stats().pages_cached, 200u);
  // The first look after an interval only marks what is idle from now on: pages freed just
  // before it are not released.
  std::this_thread::sleep_for(milliseconds(80));
  CycleOnePage(pages);
  EXPECT_EQ(pages.stats().pages_cached, 200u);
  // Still untouched one interval later: everything the shared stack held goes; the thread's own
  // cache (thread_cache_pages) stays.
  std::this_thread::sleep_for(milliseconds(80));
  CycleOnePage(pages);
  EXPECT_EQ(pages.stats().pages_cached, 8u);
  EXPECT_EQ(pages.stats().pages_outstanding, 0u);
  // Taken again later, they come from the system: 92 pages, in batches of 4 (one miss each).
  const uint64_t misses = pages.stats().cache_misses;
  for (void* p : AllocateMany(pages, 100)) pages.Deallocate(p);
  EXPECT_EQ(pages.stats().cache_misses, misses + 92 / 4);
}

TEST(CachedPageAllocator, PagesInUseEveryIntervalAreKept) {
  using std::chrono::milliseconds;
  CachedPageAllocator pages({4096, 256, 8, milliseconds(20)});
  const auto until = std::chrono::steady_clock::now() + milliseconds(300);
  int rounds = 0;
  while (std::chrono::steady_clock::now() < until || rounds < 3) {
    for (void* p : AllocateMany(pages, 100)) pages.Deallocate(p);
    ++rounds;
    std::this_thread::sleep_for(milliseconds(2));
  }
  // Only the first round went to the system (in batches of 4): the working set was never
  // released.
  EXPECT_EQ(pages.stats().cache_misses, 100u / 4) << rounds << " rounds";
  EXPECT_EQ(pages.stats().pages_cached, 100u);
}

// ReleaseIdle() is the same look at the clock without any allocation: a pool whose traffic
// stopped gives its idle pages back when its owner calls it (the server, from a timer).
TEST(CachedPageAllocator, ReleaseIdleReleasesWithoutTraffic) {
  using std::chrono::milliseconds;
  CachedPageAllocator pages({4096, 256, 8, milliseconds(50)});
  for (void* p : AllocateMany(pages, 200)) pages.Deallocate(p);
  pages.ReleaseIdle();  // before an interval passed: nothing
  EXPECT_EQ(pages.stats().pages_cached, 200u);
  std::this_thread::sleep_for(milliseconds(80));
  pages.ReleaseIdle();  // marks what is idle from now on
  EXPECT_EQ(pages.stats().pages_cached, 200u);
  std::this_thread::sleep_for(milliseconds(80));
  pages.ReleaseIdle();
  EXPECT_EQ(pages.stats().pages_cached, 8u);  // the thread's own cache stays
  EXPECT_EQ(pages.stats().allocations, 200u);  // no allocation drove it
  CachedPageAllocator keeping({4096, 256, 8});  // idle_release 0: ReleaseIdle() does nothing
  for (void* p : AllocateMany(keeping, 200)) keeping.Deallocate(p);
  std::this_thread::sleep_for(milliseconds(30));
  keeping.ReleaseIdle();
  EXPECT_EQ(keeping.stats().pages_cached, 200u);
}

TEST(CachedPageAllocator, WithoutIdleReleaseFreePagesStayCached) {
  CachedPageAllocator pages({4096, 256, 8});
  for (void* p : AllocateMany(pages, 200)) pages.Deallocate(p);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  for (int i = 0; i < 4; ++i) CycleOnePage(pages);
  EXPECT_EQ(pages.stats().pages_cached, 200u);
}

TEST(CachedPageAllocator, NullDeallocateIsNoop) {
  CachedPageAllocator pages({4096, 4, 2});
  pages.Deallocate(nullptr);
  EXPECT_EQ(pages.stats().pages_cached, 0u);
  auto sys = MakeSystemPageAllocator(4096, nullptr);
  sys->Deallocate(nullptr);
  EXPECT_EQ(sys->stats().pages_outstanding, 0u);
}

}  // namespace
}  // namespace arenarpc::memory
