#include "arenarpc/memory/cached_page_allocator.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include "memory/free_memory_release.h"
#include "memory/option_errors.h"
#include "memory/system_pages.h"

namespace arenarpc::memory {
namespace {

std::atomic<uint64_t> g_next_core_id{1};

// Operations between two looks at the clock for idle pages (PagePoolOptions::idle_release).
constexpr uint32_t kOpsPerIdleCheck = 64;
// Freed at once by an idle release, past which malloc is asked to return its free pages (freed
// 8-16 KiB blocks sit between live ones, where glibc does not return them by itself).
constexpr size_t kIdleBytesWorthReturning = size_t{1} << 20;

int64_t SteadyNowNs() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// Owner-thread-only counter that other threads may read: a relaxed load/store pair instead of an
// atomic read-modify-write keeps the fast path free of locked instructions. (Not in the anonymous
// namespace: ThreadPageCache's fields may not use it.)
struct LocalCounter {
  std::atomic<uint64_t> value{0};
  void Add(uint64_t n = 1) noexcept {
    value.store(value.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t Get() const noexcept { return value.load(std::memory_order_relaxed); }
};

struct ThreadPageCache;

struct CachedPageAllocator::Core {
  explicit Core(const PagePoolOptions& o)
      : options(o),
        id(g_next_core_id.fetch_add(1, std::memory_order_relaxed)),
        batch(std::max<size_t>(1, o.thread_cache_pages / 2)),
        idle_release_ns(std::chrono::nanoseconds(o.idle_release).count()),
        next_idle_check_ns(SteadyNowNs() + idle_release_ns) {
    shared.reserve(o.capacity_pages);
  }
  ~Core() {
    for (void* page : shared) FreeSystemPage(page, options.page_size);
  }

  const PagePoolOptions options;
  const uint64_t id;
  const size_t batch;  // pages moved between a thread cache and the shared stack at once
  std::atomic<bool> closed{false};  // the CachedPageAllocator is gone; caches should flush

  mutable std::mutex mu;
  std::vector<void*> shared;             // free pages; size <= capacity_pages - granted_credit
  size_t granted_credit = 0;             // sum of thread caches' credits
  std::vector<ThreadPageCache*> caches;  // live thread caches, for stats()
  // Counters of operations done under the lock without a thread cache, and of flushed caches.
  uint64_t allocations = 0, hits = 0, misses = 0, frees = 0;

  // Idle release: the bottom `shared_low` pages of the shared stack (LIFO) were not taken since
  // the last check; at the next check they go back to the system.
  const int64_t idle_release_ns;            // 0: never
  std::atomic<int64_t> next_idle_check_ns;  // steady clock
  size_t shared_low = 0;                    // under mu
  uint32_t locked_ops = 0;                  // under mu: operations without a thread cache

  size_t SharedCapacity() const { return options.capacity_pages - granted_credit; }
  void NoteSharedTaken() { shared_low = std::min(shared_low, shared.size()); }

  // Called, with idle_release_ns > 0, every kOpsPerIdleCheck operations of a thread cache (or of
  // the locked path), without the lock held.
  void MaybeReleaseIdle() noexcept {
    const int64_t now = SteadyNowNs();
    if (now < next_idle_check_ns.load(std::memory_order_relaxed)) return;
    size_t n = 0;
    {
      std::lock_guard lock(mu);
      if (now < next_idle_check_ns.load(std::memory_order_relaxed)) return;  // another thread did
      next_idle_check_ns.store(now + idle_release_ns, std::memory_order_relaxed);
      // Freed under the lock: rare, and no allocation (this is noexcept) to move them out first.
      n = std::min(shared_low, shared.size());
      for (size_t i = 0; i < n; ++i) FreeSystemPage(shared[i], options.page_size);
      shared.erase(shared.begin(), shared.begin() + static_cast<ptrdiff_t>(n));
      shared_low = shared.size();
    }
    if (n * options.page_size >= kIdleBytesWorthReturning) ReleaseFreeMemoryToSystem();
  }
};

// One thread's free pages for one CachedPageAllocator.
struct ThreadPageCache {
  explicit ThreadPageCache(std::shared_ptr<CachedPageAllocator::Core> c) : core(std::move(c)) {
    std::lock_guard lock(core->mu);
    const size_t free_credit =
        core->options.capacity_pages - core->granted_credit - core->shared.size();
    // Make room by freeing shared pages if needed, so a new thread still gets a local cache.
    credit = std::min(core->options.thread_cache_pages,
                      core->options.capacity_pages - core->granted_credit);
    if (credit > free_credit) {
      size_t excess = credit - free_credit;
      for (; excess > 0 && !core->shared.empty(); --excess) {
        FreeSystemPage(core->shared.back(), core->options.page_size);
        core->shared.pop_back();
      }
      core->NoteSharedTaken();
    }
    core->granted_credit += credit;
    pages.reserve(credit);
    core->caches.push_back(this);
  }

  // Returns every page to the shared stack (or the system) and the credit to the core.
  ~ThreadPageCache() {
    std::lock_guard lock(core->mu);
    core->granted_credit -= credit;
    for (void* page : pages) {
      if (core->shared.size() < core->SharedCapacity()) {
        core->shared.push_back(page);
      } else {
        FreeSystemPage(page, core->options.page_size);
      }
    }
    core->allocations += allocations.Get();
    core->hits += hits.Get();
    core->misses += misses.Get();
    core->frees += frees.Get();
    std::erase(core->caches, this);
  }

  std::shared_ptr<CachedPageAllocator::Core> core;
  size_t credit = 0;
  uint32_t ops = 0;  // since the last idle check
  std::vector<void*> pages;
  LocalCounter allocations, hits, misses, frees, cached;
};

namespace {

// All of one thread's page caches. Destroyed at thread exit; a page freed afterwards (by another
// thread-local's destructor) takes the locked slow path.
struct ThreadCaches {
  std::vector<std::unique_ptr<ThreadPageCache>> caches;
  ThreadPageCache* last = nullptr;
  ~ThreadCaches();
};

thread_local bool t_caches_destroyed = false;  // trivially destructible: readable during teardown
thread_local ThreadCaches t_caches;

ThreadCaches::~ThreadCaches() {
  t_caches_destroyed = true;
  last = nullptr;
  caches.clear();
}

ThreadPageCache* FindCache(const std::shared_ptr<CachedPageAllocator::Core>& core) {
  if (t_caches_destroyed) return nullptr;
  ThreadCaches& tc = t_caches;
  if (tc.last != nullptr && tc.last->core == core) return tc.last;
  for (auto& c : tc.caches) {
    if (c->core == core) return tc.last = c.get();
  }
  // New cache: first hand back the pages held for allocators that no longer exist.
  std::erase_if(tc.caches, [](const std::unique_ptr<ThreadPageCache>& c) {
    return c->core->closed.load(std::memory_order_acquire);
  });
  tc.caches.push_back(std::make_unique<ThreadPageCache>(core));
  return tc.last = tc.caches.back().get();
}

// An empty cache takes a batch of pages from the system at once, not one page per miss: each
// malloc of a page (a large-bin request to glibc) first merges every fastbin chunk the process
// freed since the last one (malloc_consolidate), and the small allocations that follow are then
// carved from the merged chunks on glibc's slow path. One page at a time, a server whose pages in
// use keep growing (replies held for a slow reader) paid that for every page.
void RefillFromSystem(ThreadPageCache& cache) noexcept {
  const size_t n = std::min(cache.core->batch, cache.credit) - 1;
  try {
    for (size_t i = 0; i < n; ++i) {
      cache.pages.push_back(AllocateSystemPage(cache.core->options.page_size));
    }
  } catch (const std::bad_alloc&) {  // what it got stays cached; the page asked for is served
  }
  cache.cached.value.store(cache.pages.size(), std::memory_order_relaxed);
}

}  // namespace

CachedPageAllocator::CachedPageAllocator(const PagePoolOptions& options) {
  ThrowIfInvalid(PagePoolOptionsError(options));
  core_ = std::make_shared<Core>(options);
}

CachedPageAllocator::~CachedPageAllocator() {
  core_->closed.store(true, std::memory_order_release);
  // Flush this thread's cache now; other threads flush theirs lazily (see FindCache).
  if (!t_caches_destroyed) {
    std::erase_if(t_caches.caches,
                  [&](const std::unique_ptr<ThreadPageCache>& c) { return c->core == core_; });
    t_caches.last = nullptr;
  }
}

size_t CachedPageAllocator::page_size() const noexcept { return core_->options.page_size; }
const PagePoolOptions& CachedPageAllocator::options() const noexcept { return core_->options; }

void* CachedPageAllocator::Allocate() {
  Core& core = *core_;
  ThreadPageCache* cache = FindCache(core_);
  if (cache != nullptr && cache->credit > 0) {
    if (core.idle_release_ns != 0 && ++cache->ops == kOpsPerIdleCheck) {
      cache->ops = 0;
      core.MaybeReleaseIdle();
    }
    if (cache->pages.empty()) {
      std::lock_guard lock(core.mu);
      const size_t n = std::min({core.batch, cache->credit, core.shared.size()});
      cache->pages.insert(cache->pages.end(), core.shared.end() - n, core.shared.end());
      core.shared.resize(core.shared.size() - n);
      core.NoteSharedTaken();
    }
    cache->allocations.Add();
    if (!cache->pages.empty()) {
      void* page = cache->pages.back();
      cache->pages.pop_back();
      cache->cached.value.store(cache->pages.size(), std::memory_order_relaxed);
      cache->hits.Add();
      return page;
    }
    cache->misses.Add();
    void* page = AllocateSystemPage(core.options.page_size);
    RefillFromSystem(*cache);
    return page;
  }
  void* page = nullptr;
  bool check_idle = false;
  {
    std::lock_guard lock(core.mu);
    ++core.allocations;
    check_idle = core.idle_release_ns != 0 && ++core.locked_ops % kOpsPerIdleCheck == 0;
    if (!core.shared.empty()) {
      page = core.shared.back();
      core.shared.pop_back();
      core.NoteSharedTaken();
      ++core.hits;
    } else {
      ++core.misses;
    }
  }
  if (check_idle) core.MaybeReleaseIdle();
  return page != nullptr ? page : AllocateSystemPage(core.options.page_size);
}

void CachedPageAllocator::Deallocate(void* page) noexcept {
  if (page == nullptr) return;
  Core& core = *core_;
  ThreadPageCache* cache = FindCache(core_);
  if (cache != nullptr && cache->credit > 0) {
    cache->frees.Add();
    if (cache->pages.size() >= cache->credit) {
      // Spill a batch to the shared stack under one lock; if that is full too, the cache is at
      // capacity and the page goes back to the system.
      std::lock_guard lock(core.mu);
      const size_t room = core.SharedCapacity() - core.shared.size();
      const size_t n = std::min({core.batch, cache->pages.size(), room});
      if (n == 0) {
        FreeSystemPage(page, core.options.page_size);
        return;
      }
      core.shared.insert(core.shared.end(), cache->pages.end() - n, cache->pages.end());
      cache->pages.resize(cache->pages.size() - n);
    }
    cache->pages.push_back(page);
    cache->cached.value.store(cache->pages.size(), std::memory_order_relaxed);
    return;
  }
  {
    std::lock_guard lock(core.mu);
    ++core.frees;
    if (core.shared.size() < core.SharedCapacity()) {
      core.shared.push_back(page);
      return;
    }
  }
  FreeSystemPage(page, core.options.page_size);
}

size_t CachedPageAllocator::Trim() noexcept {
  Core& core = *core_;
  size_t freed = 0;
  if (!t_caches_destroyed) {
    for (auto& cache : t_caches.caches) {
      if (cache->core != core_) continue;
      for (void* page : cache->pages) FreeSystemPage(page, core.options.page_size);
      freed += cache->pages.size();
      cache->pages.clear();
      cache->cached.value.store(0, std::memory_order_relaxed);
    }
  }
  std::lock_guard lock(core.mu);
  for (void* page : core.shared) FreeSystemPage(page, core.options.page_size);
  freed += core.shared.size();
  core.shared.clear();
  core.NoteSharedTaken();
  return freed;
}

void CachedPageAllocator::ReleaseIdle() noexcept {
  if (core_->idle_release_ns != 0) core_->MaybeReleaseIdle();
}

PageAllocatorStats CachedPageAllocator::stats() const noexcept {
  const Core& core = *core_;
  std::lock_guard lock(core.mu);
  PageAllocatorStats s;
  s.allocations = core.allocations;
  s.cache_hits = core.hits;
  s.cache_misses = core.misses;
  s.pages_cached = core.shared.size();
  uint64_t frees = core.frees;
  for (const ThreadPageCache* c : core.caches) {
    s.allocations += c->allocations.Get();
    s.cache_hits += c->hits.Get();
    s.cache_misses += c->misses.Get();
    s.pages_cached += c->cached.Get();
    frees += c->frees.Get();
  }
  s.pages_outstanding = s.allocations >= frees ? s.allocations - frees : 0;
  return s;
}

}  // namespace arenarpc::memory
