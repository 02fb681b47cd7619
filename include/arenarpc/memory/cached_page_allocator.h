#pragma once
// A bounded cache of free pages in front of the system allocator.
//
// Each thread keeps a small local stack of free pages (no lock on the fast path); it refills from /
// spills to a shared stack in batches under one mutex. The bound is strict: a thread cache may only
// hold as many pages as it was granted "credit" for, and credits plus the shared stack never exceed
// capacity_pages, so the total number of cached pages never exceeds the capacity. A page may be
// freed on any thread; it simply lands in that thread's cache.

#include <memory>

#include "arenarpc/memory/page_allocator.h"

namespace arenarpc::memory {

class CachedPageAllocator final : public PageAllocator {
 public:
  // Validates the options; a constructor has no return value, so it throws std::invalid_argument
  // naming the bad setting. MakeCachedPageAllocator(options, &error) returns nullptr instead.
  explicit CachedPageAllocator(const PagePoolOptions& options);
  ~CachedPageAllocator() override;
  CachedPageAllocator(const CachedPageAllocator&) = delete;
  CachedPageAllocator& operator=(const CachedPageAllocator&) = delete;

  size_t page_size() const noexcept override;
  void* Allocate() override;
  void Deallocate(void* page) noexcept override;
  PageAllocatorStats stats() const noexcept override;
  const PagePoolOptions& options() const noexcept;
  // Frees the cached pages of the shared stack and of the calling thread's cache; other threads'
  // caches are theirs alone (at most thread_cache_pages each). Returns the pages freed.
  size_t Trim() noexcept;
  // With options().idle_release > 0: the idle release now, if an interval passed since the last
  // check (the pool checks by itself only as it is used, so an owner whose traffic may stop calls
  // this from a timer). Otherwise nothing.
  void ReleaseIdle() noexcept;

  // Shared state; kept alive by thread caches that still hold pages of a destroyed allocator, which
  // hand them back when their thread exits or next creates a cache.
  struct Core;

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace arenarpc::memory
