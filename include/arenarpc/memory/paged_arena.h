#pragma once
// Paged arenas: google::protobuf::Arena instances whose memory comes from a PageAllocator, built
// with stock protobuf 3.21 ArenaOptions (no patched protobuf).
//
// protobuf's block_alloc/block_dealloc hooks are plain function pointers without a context
// argument, so each PagedArenaFactory claims one of kMaxFactories static slots; the slot's
// instantiated hook pair finds the factory's page allocator. Blocks of exactly one page go to the
// pool, larger ones (an allocation bigger than a page) to the heap. start_block_size =
// max_block_size = page size, so protobuf asks for page-sized blocks.
//
// The Arena object itself lives at the start of its first page and the rest of that page is the
// arena's initial block: creating an arena costs one page from the (thread-local) cache and no heap
// allocation. Destroying it returns every page.

#include <cstddef>
#include <memory>

#include "arenarpc/memory/page_allocator.h"

namespace google::protobuf {
class Arena;
}  // namespace google::protobuf

namespace arenarpc::memory {

class PagedArenaFactory {
 public:
  static constexpr int kMaxFactories = 64;

  // Throws std::runtime_error if all kMaxFactories slots are in use.
  explicit PagedArenaFactory(std::shared_ptr<PageAllocator> pages);
  ~PagedArenaFactory();  // every arena it created must have been destroyed
  PagedArenaFactory(const PagedArenaFactory&) = delete;
  PagedArenaFactory& operator=(const PagedArenaFactory&) = delete;

  google::protobuf::Arena* Create();                      // throws std::bad_alloc
  void Destroy(google::protobuf::Arena* arena) noexcept;  // any thread; nullptr is a no-op

  PageAllocator& pages() const noexcept { return *pages_; }
  static int slots_in_use() noexcept;

 private:
  std::shared_ptr<PageAllocator> pages_;
  int slot_;
  size_t arena_offset_;  // where the initial block starts within the first page
};

// RAII owner of one paged arena.
class PagedArena {
 public:
  explicit PagedArena(PagedArenaFactory& factory) : factory_(&factory), arena_(factory.Create()) {}
  ~PagedArena() { factory_->Destroy(arena_); }
  PagedArena(const PagedArena&) = delete;
  PagedArena& operator=(const PagedArena&) = delete;
  google::protobuf::Arena* get() const noexcept { return arena_; }
  google::protobuf::Arena* operator->() const noexcept { return arena_; }

 private:
  PagedArenaFactory* factory_;
  google::protobuf::Arena* arena_;
};

}  // namespace arenarpc::memory
