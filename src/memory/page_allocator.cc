// Page pool option validation and the uncached system page allocator.
#include "arenarpc/memory/page_allocator.h"

#include <atomic>
#include <new>
#include <stdexcept>
#include <string>

#include "arenarpc/memory/cached_page_allocator.h"
#include "memory/option_errors.h"
#include "memory/system_pages.h"

namespace arenarpc::memory {
namespace {

constexpr size_t kMinPageSize = 256;
constexpr size_t kMaxPageSize = size_t{1} << 20;
// The longest idle_release: what the server's timeouts accept (in nanoseconds, far from overflow).
constexpr int64_t kMaxIdleReleaseMs = 2147483647;

class SystemPageAllocator final : public PageAllocator {
 public:
  explicit SystemPageAllocator(size_t page_size) : page_size_(page_size) {}
  ~SystemPageAllocator() override = default;

  size_t page_size() const noexcept override { return page_size_; }
  void* Allocate() override {
    void* page = AllocateSystemPage(page_size_);
    allocations_.fetch_add(1, std::memory_order_relaxed);
    return page;
  }
  void Deallocate(void* page) noexcept override {
    if (page == nullptr) return;
    FreeSystemPage(page, page_size_);
    frees_.fetch_add(1, std::memory_order_relaxed);
  }
  PageAllocatorStats stats() const noexcept override {
    PageAllocatorStats s;
    s.allocations = allocations_.load(std::memory_order_relaxed);
    s.cache_misses = s.allocations;
    const uint64_t frees = frees_.load(std::memory_order_relaxed);
    s.pages_outstanding = s.allocations >= frees ? s.allocations - frees : 0;
    return s;
  }

 private:
  const size_t page_size_;
  std::atomic<uint64_t> allocations_{0};
  std::atomic<uint64_t> frees_{0};
};

}  // namespace

std::string PageSizeError(size_t page_size) {
  if (page_size < kMinPageSize || page_size > kMaxPageSize || (page_size & (page_size - 1)) != 0) {
    return "page_size " + std::to_string(page_size) +
           " is invalid: it must be a power of two in [256, 1048576] bytes";
  }
  return {};
}

std::string PagePoolOptionsError(const PagePoolOptions& options) {
  if (std::string error = PageSizeError(options.page_size); !error.empty()) return error;
  if (options.capacity_pages == 0) {
    return "capacity_pages must be >= 1 (use MakeSystemPageAllocator for a pool without cache)";
  }
  if (options.thread_cache_pages > options.capacity_pages) {
    return "thread_cache_pages (" + std::to_string(options.thread_cache_pages) +
           ") must not exceed capacity_pages (" + std::to_string(options.capacity_pages) + ")";
  }
  if (options.idle_release.count() < 0 || options.idle_release.count() > kMaxIdleReleaseMs) {
    return "idle_release must be 0 (keep idle pages) .. " + std::to_string(kMaxIdleReleaseMs) +
           " ms, not " + std::to_string(options.idle_release.count()) + " ms";
  }
  return {};
}

int ValidatePagePoolOptions(const PagePoolOptions& options, std::string* error) {
  return ReportError(PagePoolOptionsError(options), error);
}

// Plain operator new: an aligned one costs glibc's memalign, which splits off the chunk's unaligned
// head and tail and frees them into its fastbins, so that the next page (a large-bin request)
// first merges every small chunk the process freed since (malloc_consolidate), and the small
// allocations after it run on malloc's slow path -- at each page.
void* AllocateSystemPage(size_t page_size) { return ::operator new (page_size); }

void FreeSystemPage(void* page, size_t page_size) noexcept { ::operator delete (page, page_size); }

std::unique_ptr<PageAllocator> MakeSystemPageAllocator(size_t page_size, std::string* error) {
  if (ReportError(PageSizeError(page_size), error) != 0) return nullptr;
  return std::make_unique<SystemPageAllocator>(page_size);
}

std::unique_ptr<PageAllocator> MakeCachedPageAllocator(const PagePoolOptions& options,
                                                       std::string* error) {
  if (ValidatePagePoolOptions(options, error) != 0) return nullptr;
  return std::make_unique<CachedPageAllocator>(options);
}

// The deprecated throwing spellings.
void ValidatePagePoolOptions(const PagePoolOptions& options) {
  ThrowIfInvalid(PagePoolOptionsError(options));
}
std::unique_ptr<PageAllocator> MakeSystemPageAllocator(size_t page_size) {
  ThrowIfInvalid(PageSizeError(page_size));
  return std::make_unique<SystemPageAllocator>(page_size);
}
std::unique_ptr<PageAllocator> MakeCachedPageAllocator(const PagePoolOptions& options) {
  return std::make_unique<CachedPageAllocator>(options);  // throws as the constructor does
}

}  // namespace arenarpc::memory
