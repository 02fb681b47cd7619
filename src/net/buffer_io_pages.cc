// The process-wide page pool that I/O buffers come from.
#include <atomic>
#include <cstdint>
#include <memory>
#include <new>

#include "arenarpc/buffer_chain.h"

namespace arenarpc::net {
namespace {

constexpr size_t kIoPageSize = 8192;

// Stand-in until the memory layer's MakeCachedPageAllocator lands: pages straight from the heap.
class HeapIoPages final : public memory::PageAllocator {
 public:
  size_t page_size() const noexcept override { return kIoPageSize; }
  void* Allocate() override {
    allocations_.fetch_add(1, std::memory_order_relaxed);
    outstanding_.fetch_add(1, std::memory_order_relaxed);
    return ::operator new(kIoPageSize, std::align_val_t{16});
  }
  void Deallocate(void* page) noexcept override {
    outstanding_.fetch_sub(1, std::memory_order_relaxed);
    ::operator delete(page, std::align_val_t{16});
  }
  memory::PageAllocatorStats stats() const noexcept override {
    memory::PageAllocatorStats s;
    s.allocations = s.cache_misses = allocations_.load(std::memory_order_relaxed);
    s.pages_outstanding = outstanding_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  std::atomic<uint64_t> allocations_{0}, outstanding_{0};
};

std::atomic<memory::PageAllocator*> g_override{nullptr};

memory::PageAllocator& DefaultIoPages() {
  // Leaked on purpose: blocks may be released by static destructors of other translation units.
  // TODO(memory layer): MakeCachedPageAllocator({kIoPageSize, 8192, 64}) once it exists.
  static memory::PageAllocator* const pages = new HeapIoPages();
  return *pages;
}

}  // namespace

memory::PageAllocator& IoPageAllocator() {
  memory::PageAllocator* pages = g_override.load(std::memory_order_acquire);
  return pages != nullptr ? *pages : DefaultIoPages();
}

void SetIoPageAllocator(memory::PageAllocator* pages) {
  g_override.store(pages, std::memory_order_release);
}

}  // namespace arenarpc::net
