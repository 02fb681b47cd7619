#pragma once
// A PageAllocator for tests: small pages straight from the heap, counting what is outstanding.
#include <atomic>
#include <cstdint>
#include <new>

#include "arenarpc/memory/page_allocator.h"

namespace arenarpc::testing {

class CountingPages final : public memory::PageAllocator {
 public:
  explicit CountingPages(size_t page_size) : page_size_(page_size) {}
  size_t page_size() const noexcept override { return page_size_; }
  void* Allocate() override {
    allocations_.fetch_add(1, std::memory_order_relaxed);
    outstanding_.fetch_add(1, std::memory_order_relaxed);
    return ::operator new (page_size_, std::align_val_t{16});
  }
  void Deallocate(void* page) noexcept override {
    outstanding_.fetch_sub(1, std::memory_order_relaxed);
    ::operator delete (page, std::align_val_t{16});
  }
  memory::PageAllocatorStats stats() const noexcept override {
    memory::PageAllocatorStats s;
    s.allocations = allocations_.load();
    s.pages_outstanding = outstanding_.load();
    return s;
  }
  uint64_t outstanding() const { return outstanding_.load(); }

 private:
  size_t page_size_;
  std::atomic<uint64_t> allocations_{0}, outstanding_{0};
};

}  // namespace arenarpc::testing
