#pragma once
// Fixed-size page allocators: the unit of memory that paged arenas and I/O buffers are built from.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace arenarpc::memory {

// Settings of a page pool. Validated on construction: page_size must be a power of two in
// [256 B, 1 MiB]; capacity_pages >= 1 (a pool without cache is MakeSystemPageAllocator);
// thread_cache_pages <= capacity_pages; idle_release in [0, 2147483647 ms].
// 16 KiB pages: a large call takes a quarter of the pages (and of the cache's hand-offs between
// threads) that 4 KiB pages need; the cache holds at most 16 MiB.
struct PagePoolOptions {
  size_t page_size = 16384;        // bytes per page, power of two
  size_t capacity_pages = 1024;    // max free pages kept in the cache (all threads together)
  size_t thread_cache_pages = 16;  // max free pages a thread keeps locally (fast path, no lock)
  // > 0: pages of the shared cache that no allocation took for this long go back to the system
  // (checked as the pool is used, and when its owner calls CachedPageAllocator::ReleaseIdle();
  // the server does that for the I/O pool every interval). 0: kept until Trim() or the cache's
  // capacity (the paged strategy's caches, by design).
  std::chrono::milliseconds idle_release{0};
};

struct PageAllocatorStats {
  uint64_t allocations = 0;        // pages handed out
  uint64_t cache_hits = 0;         // ... of which came from the cache
  uint64_t cache_misses = 0;       // ... of which came from the system
  uint64_t pages_cached = 0;       // free pages held right now (all thread caches + shared cache)
  uint64_t pages_outstanding = 0;  // pages handed out and not yet returned
};

// Hands out blocks of exactly page_size() bytes, aligned to at least 16 bytes. Thread-safe; a page
// may be returned from a different thread than the one that allocated it.
class PageAllocator {
 public:
  virtual ~PageAllocator() = default;
  virtual size_t page_size() const noexcept = 0;
  virtual void* Allocate() = 0;  // throws std::bad_alloc on exhaustion
  virtual void Deallocate(void* page) noexcept = 0;
  virtual PageAllocatorStats stats() const noexcept = 0;
};

// Set-up functions (docs/api-conventions.md, "Errors"): invalid settings make them return -1 or
// nullptr with a message naming the setting in *error (when `error` is not nullptr); they never
// throw std::invalid_argument.
int ValidatePagePoolOptions(const PagePoolOptions& options, std::string* error);
// Pages straight from the system allocator; no caching. nullptr for an invalid page_size.
std::unique_ptr<PageAllocator> MakeSystemPageAllocator(size_t page_size, std::string* error);
// A bounded cache of free pages in front of a system page allocator (see cached_page_allocator.h).
std::unique_ptr<PageAllocator> MakeCachedPageAllocator(const PagePoolOptions& options,
                                                       std::string* error);

// The throwing spellings (std::invalid_argument), deprecated for one release.
[[deprecated("use ValidatePagePoolOptions(options, &error)")]] void ValidatePagePoolOptions(
    const PagePoolOptions& options);
[[deprecated("use MakeSystemPageAllocator(page_size, &error)")]] std::unique_ptr<PageAllocator>
MakeSystemPageAllocator(size_t page_size);
[[deprecated("use MakeCachedPageAllocator(options, &error)")]] std::unique_ptr<PageAllocator>
MakeCachedPageAllocator(const PagePoolOptions& options);

}  // namespace arenarpc::memory
