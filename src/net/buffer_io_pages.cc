// The process-wide page pool that I/O buffers come from.
#include <atomic>
#include <chrono>
#include <memory>

#include "arenarpc/buffer_chain.h"

namespace arenarpc::net {
namespace {

std::atomic<memory::PageAllocator*> g_override{nullptr};

memory::PageAllocator& DefaultIoPages() {
  // Leaked on purpose: blocks may be released by static destructors of other translation units,
  // and by threads that outlive main().
  static memory::PageAllocator* const pages = [] {
    memory::PagePoolOptions options;
    options.page_size = 8192;       // one page holds a typical request or reply frame
    options.capacity_pages = 8192;  // at most 64 MiB of idle I/O pages stay cached
    options.thread_cache_pages = 64;
    // What a burst left cached (queued requests, replies held for slow readers) goes back once
    // traffic no longer needs it, so steady RSS follows steady load.
    options.idle_release = std::chrono::seconds(1);
    return memory::MakeCachedPageAllocator(options, nullptr).release();
  }();
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
