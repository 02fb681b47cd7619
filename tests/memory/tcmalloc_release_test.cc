// ReleaseFreeMemoryToSystem under gperftools' tcmalloc (this test links it): what the calling
// thread freed leaves its thread cache and the RSS, not only what the page heap held free.
#include <gtest/gtest.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "memory/free_memory_release.h"
#include "resident_bytes.h"

namespace arenarpc::memory {
namespace {

// tcmalloc's counters, looked up as the code under test does (no link-time dependency).
uint64_t TcmallocProperty(const char* name) {
  using GetFn = int (*)(const char*, size_t*);
  static const auto get =
      reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty"));
  size_t value = 0;
  return get != nullptr && get(name, &value) != 0 ? value : UINT64_MAX;
}

TEST(TcmallocRelease, FreedObjectsLeaveTheThreadCacheAndTheRss) {
  ASSERT_NE(TcmallocProperty("tcmalloc.thread_cache_free_bytes"), UINT64_MAX)
      << "the test binary runs without tcmalloc";
  // 64 MiB of 256-byte objects, written to, then all freed on this thread: they fill its cache
  // and the rest go back to the central lists, whole spans of them to the page heap.
  constexpr size_t kObject = 256, kObjects = (64u << 20) / kObject, kCycled = 8192;
  const uint64_t baseline = ResidentBytes();
  std::vector<std::unique_ptr<char[]>> objects(kObjects);
  for (auto& o : objects) {
    o.reset(new char[kObject]);
    std::memset(o.get(), 1, kObject);
  }
  objects.clear();
  // A thread that has been allocating and freeing a while (a server's): its cache has grown its
  // lists to the objects it cycles, and keeps the last batch freed.
  for (int cycle = 0; cycle < 2000; ++cycle) {
    objects.resize(kCycled);
    for (auto& o : objects) o.reset(new char[kObject]);
    objects.clear();
  }
  objects.shrink_to_fit();
  const uint64_t cached = TcmallocProperty("tcmalloc.thread_cache_free_bytes");
  const uint64_t before = ResidentBytes();
  const FreeMemoryRelease asked = ReleaseFreeMemoryToSystem();
  const uint64_t after = ResidentBytes();
  const uint64_t cached_after = TcmallocProperty("tcmalloc.thread_cache_free_bytes");
  std::printf("thread cache %llu -> %llu bytes, RSS %llu -> %llu -> %llu KiB\n",
              static_cast<unsigned long long>(cached),
              static_cast<unsigned long long>(cached_after),
              static_cast<unsigned long long>(baseline >> 10),
              static_cast<unsigned long long>(before >> 10),
              static_cast<unsigned long long>(after >> 10));
  EXPECT_TRUE(asked.tcmalloc);
  EXPECT_TRUE(asked.tcmalloc_thread_cache);
  EXPECT_GT(cached, uint64_t{256} << 10);  // the freeing left objects in the thread's cache
  EXPECT_LT(cached_after, uint64_t{64} << 10);
  // The 64 MiB freed left the RSS, but for what the central lists' transfer caches keep.
  EXPECT_LT(after, baseline + (uint64_t{8} << 20));
}

}  // namespace
}  // namespace arenarpc::memory
