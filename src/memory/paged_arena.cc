#include "arenarpc/memory/paged_arena.h"

#include <google/protobuf/arena.h>

#include <array>
#include <atomic>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace arenarpc::memory {
namespace {

using BlockAlloc = void* (*)(size_t);
using BlockDealloc = void (*)(void*, size_t);

std::array<std::atomic<PageAllocator*>, PagedArenaFactory::kMaxFactories> g_slots{};

template <int Slot>
void* AllocBlock(size_t size) {
  PageAllocator* pages = g_slots[Slot].load(std::memory_order_acquire);
  if (size == pages->page_size()) return pages->Allocate();
  return ::operator new(size);
}

template <int Slot>
void DeallocBlock(void* block, size_t size) {
  PageAllocator* pages = g_slots[Slot].load(std::memory_order_acquire);
  if (size == pages->page_size()) {
    pages->Deallocate(block);
  } else {
    ::operator delete(block, size);
  }
}

template <int... Slots>
constexpr std::array<std::pair<BlockAlloc, BlockDealloc>, sizeof...(Slots)> MakeHooks(
    std::integer_sequence<int, Slots...>) {
  return {std::pair<BlockAlloc, BlockDealloc>{&AllocBlock<Slots>, &DeallocBlock<Slots>}...};
}

constexpr auto kHooks =
    MakeHooks(std::make_integer_sequence<int, PagedArenaFactory::kMaxFactories>{});

constexpr size_t AlignUp(size_t n, size_t a) { return (n + a - 1) / a * a; }
// The smallest page (256 B) must still hold the Arena object plus some initial block.
static_assert(AlignUp(sizeof(google::protobuf::Arena), 64) <= 192);

}  // namespace

PagedArenaFactory::PagedArenaFactory(std::shared_ptr<PageAllocator> pages)
    : pages_(std::move(pages)),
      slot_(-1),
      arena_offset_(AlignUp(sizeof(google::protobuf::Arena), 64)) {
  if (!pages_) throw std::invalid_argument("PagedArenaFactory: page allocator is null");
  for (int i = 0; i < kMaxFactories; ++i) {
    PageAllocator* expected = nullptr;
    if (g_slots[i].compare_exchange_strong(expected, pages_.get(), std::memory_order_acq_rel)) {
      slot_ = i;
      return;
    }
  }
  throw std::runtime_error("PagedArenaFactory: all " + std::to_string(kMaxFactories) +
                           " paged-arena slots are in use; destroy unused paged strategies first");
}

PagedArenaFactory::~PagedArenaFactory() {
  g_slots[slot_].store(nullptr, std::memory_order_release);
}

int PagedArenaFactory::slots_in_use() noexcept {
  int n = 0;
  for (const auto& s : g_slots) n += s.load(std::memory_order_relaxed) != nullptr;
  return n;
}

google::protobuf::Arena* PagedArenaFactory::Create() {
  const size_t page_size = pages_->page_size();
  void* page = pages_->Allocate();
  google::protobuf::ArenaOptions options;
  options.start_block_size = page_size;
  options.max_block_size = page_size;
  options.initial_block = static_cast<char*>(page) + arena_offset_;
  options.initial_block_size = page_size - arena_offset_;
  options.block_alloc = kHooks[slot_].first;
  options.block_dealloc = kHooks[slot_].second;
  try {
    return ::new (page) google::protobuf::Arena(options);
  } catch (...) {
    pages_->Deallocate(page);
    throw;
  }
}

void PagedArenaFactory::Destroy(google::protobuf::Arena* arena) noexcept {
  if (arena == nullptr) return;
  arena->~Arena();  // returns every block but the initial one (user-owned) through the hooks
  pages_->Deallocate(arena);
}

}  // namespace arenarpc::memory
