#include "arenarpc/buffer_chain.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <new>
#include <ostream>
#include <stdexcept>

namespace arenarpc::net {
namespace {
constexpr size_t kBigAppendPages = 8;

// Makes room for `more` slices past `end` in a chain's slice array [begin, end) of `capacity`:
// slides the consumed front away, or grows the array once (doubling) — a large frame cut from
// 8 KiB pages needs ~17 slices, one allocation instead of four regrowths. `inline_refs` is the
// chain's own array, never freed. (A template: the slice type is BufferChain's own.)
template <class Ref>
void ReserveRefs(Ref*& refs, size_t& begin, size_t& end, size_t& capacity, Ref* inline_refs,
                 size_t more) {
  const size_t count = end - begin;
  if (end + more <= capacity) return;
  if (count + more <= capacity) {
    std::copy(refs + begin, refs + end, refs);
  } else {
    size_t grown_capacity = capacity * 2;
    while (grown_capacity < count + more) grown_capacity *= 2;
    Ref* grown = std::allocator<Ref>().allocate(grown_capacity);
    std::copy(refs + begin, refs + end, grown);
    if (refs != inline_refs) std::allocator<Ref>().deallocate(refs, capacity);
    refs = grown;
    capacity = grown_capacity;
  }
  begin = 0;
  end = count;
}
}  // namespace

// Storage of a chain's bytes. A page block keeps this header at the start of its page (one
// allocation per page); a large block (bigger than a page) comes from the heap.
struct BufferChain::Block {
  std::atomic<uint32_t> refs{1};
  memory::PageAllocator* pages;  // owner of the page, or nullptr for a heap block
  size_t capacity;               // bytes of data after the header
  size_t size = 0;               // bytes written; only the write owner changes it

  Block(memory::PageAllocator* p, size_t cap) : pages(p), capacity(cap) {}
  char* data() noexcept { return reinterpret_cast<char*>(this + 1); }

  static Block* Create(memory::PageAllocator& pages, size_t min_bytes) {
    const size_t page = pages.page_size();
    if (page > sizeof(Block) && min_bytes <= page - sizeof(Block)) {
      void* mem = pages.Allocate();
      return new (mem) Block(&pages, page - sizeof(Block));
    }
    // Too big for a page: one heap block of exactly the requested size.
    void* mem = ::operator new (sizeof(Block) + min_bytes, std::align_val_t{alignof(Block)});
    return new (mem) Block(nullptr, min_bytes);
  }
  void AddRef() noexcept { refs.fetch_add(1, std::memory_order_relaxed); }
  void Release() noexcept {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    memory::PageAllocator* owner = pages;
    this->~Block();
    if (owner != nullptr) {
      owner->Deallocate(this);
    } else {
      ::operator delete (static_cast<void*>(this), std::align_val_t{alignof(Block)});
    }
  }
};

BufferChain::BufferChain(memory::PageAllocator* pages) : pages_(pages) {}

BufferChain::BufferChain(BufferChain&& other) noexcept { MoveFrom(other); }

BufferChain& BufferChain::operator=(BufferChain&& other) noexcept {
  if (this != &other) {
    clear();
    ReleaseWriteBlock();
    if (refs_ != inline_refs_) {
      std::allocator<Ref>().deallocate(refs_, ref_capacity_);
      refs_ = inline_refs_;
      ref_capacity_ = kInlineRefs;
    }
    MoveFrom(other);
  }
  return *this;
}

BufferChain::~BufferChain() {
  ReleaseRefs();
  ReleaseWriteBlock();
  if (refs_ != inline_refs_) std::allocator<Ref>().deallocate(refs_, ref_capacity_);
}

size_t BufferChain::BlockCharge(const Block* block) noexcept {
  return block->pages != nullptr ? block->pages->page_size() : sizeof(Block) + block->capacity;
}

// Precondition: *this holds no refs, no write block and uses its inline array.
void BufferChain::MoveFrom(BufferChain& other) noexcept {
  pages_ = other.pages_;
  size_ = other.size_;
  held_ = other.held_;
  other.held_ = 0;
  write_block_ = other.write_block_;
  other.write_block_ = nullptr;
  if (other.refs_ == other.inline_refs_) {
    ref_begin_ = 0;
    ref_end_ = other.ref_end_ - other.ref_begin_;
    std::copy(other.refs_ + other.ref_begin_, other.refs_ + other.ref_end_, inline_refs_);
  } else {
    refs_ = other.refs_;
    ref_begin_ = other.ref_begin_;
    ref_end_ = other.ref_end_;
    ref_capacity_ = other.ref_capacity_;
    other.refs_ = other.inline_refs_;
    other.ref_capacity_ = kInlineRefs;
  }
  other.ref_begin_ = other.ref_end_ = 0;
  other.size_ = 0;
}

memory::PageAllocator& BufferChain::pages() const noexcept {
  return pages_ != nullptr ? *pages_ : IoPageAllocator();
}

size_t BufferChain::size() const noexcept { return size_; }

void BufferChain::ReleaseRefs() noexcept {
  for (size_t i = ref_begin_; i < ref_end_; ++i) refs_[i].block->Release();
  ref_begin_ = ref_end_ = 0;
  size_ = 0;
  held_ = 0;
}

void BufferChain::ReleaseWriteBlock() noexcept {
  if (write_block_ != nullptr) {
    write_block_->Release();
    write_block_ = nullptr;
  }
}

void BufferChain::clear() noexcept { ReleaseRefs(); }

void BufferChain::PushRef(const Ref& ref) {
  if (ref.length == 0) {
    ref.block->Release();
    return;
  }
  // Extend the last slice when the new one continues it (a write into the same block).
  if (ref_end_ > ref_begin_) {
    Ref& last = refs_[ref_end_ - 1];
    if (last.block == ref.block && last.offset + last.length == ref.offset) {
      last.length += ref.length;
      size_ += ref.length;
      ref.block->Release();
      return;
    }
  }
  if (ref_end_ == ref_capacity_) {
    // Full: slide down when mostly consumed from the front, else grow.
    const size_t count = ref_end_ - ref_begin_;
    ReserveRefs(refs_, ref_begin_, ref_end_, ref_capacity_, inline_refs_,
                count * 2 <= ref_capacity_ && ref_begin_ > 0 ? 1 : ref_capacity_);
  }
  refs_[ref_end_++] = ref;
  size_ += ref.length;
  held_ += BlockCharge(ref.block);
}

std::span<char> BufferChain::PrepareWrite(size_t min_bytes) {
  min_bytes = std::max<size_t>(min_bytes, 1);
  if (write_block_ == nullptr || write_block_->capacity - write_block_->size < min_bytes) {
    Block* fresh = Block::Create(pages(), min_bytes);
    ReleaseWriteBlock();
    write_block_ = fresh;
  }
  return {write_block_->data() + write_block_->size, write_block_->capacity - write_block_->size};
}

void BufferChain::CommitWrite(size_t n) {
  if (n == 0) return;
  if (write_block_ == nullptr || n > write_block_->capacity - write_block_->size) {
    throw std::logic_error("BufferChain::CommitWrite: more bytes than PrepareWrite handed out");
  }
  const size_t offset = write_block_->size;
  write_block_->size += n;
  write_block_->AddRef();
  PushRef({write_block_, offset, n});
}

void BufferChain::Append(std::string_view bytes) {
  while (!bytes.empty()) {
    const bool has_room = write_block_ != nullptr && write_block_->size < write_block_->capacity;
    // Fill the current block first. A big remainder (many pages' worth) goes into one heap block:
    // one slice instead of many, and it does not drain the page cache.
    const bool big = bytes.size() >= kBigAppendPages * pages().page_size();
    std::span<char> space = PrepareWrite(has_room || !big ? 1 : bytes.size());
    const size_t n = std::min(space.size(), bytes.size());
    std::memcpy(space.data(), bytes.data(), n);
    CommitWrite(n);
    bytes.remove_prefix(n);
  }
}

void BufferChain::Append(BufferChain&& other) {
  if (&other == this) return;
  for (size_t i = other.ref_begin_; i < other.ref_end_; ++i) {
    PushRef(other.refs_[i]);  // transfers the reference
  }
  other.ref_begin_ = other.ref_end_ = 0;
  other.size_ = 0;
  other.held_ = 0;
  // Keep appending right after other's bytes when other was still filling that block.
  if (other.write_block_ != nullptr && ref_end_ > ref_begin_) {
    const Ref& last = refs_[ref_end_ - 1];
    if (last.block == other.write_block_ && last.offset + last.length == last.block->size) {
      ReleaseWriteBlock();
      write_block_ = other.write_block_;
      other.write_block_ = nullptr;
    }
  }
}

void BufferChain::AppendShared(const BufferChain& other) {
  if (&other == this) {
    const size_t count = ref_end_ - ref_begin_;
    for (size_t i = 0; i < count; ++i) {
      const Ref ref = ref_at(i);  // copy: PushRef may reallocate
      ref.block->AddRef();
      PushRef(ref);
    }
    return;
  }
  for (size_t i = other.ref_begin_; i < other.ref_end_; ++i) {
    other.refs_[i].block->AddRef();
    PushRef(other.refs_[i]);
  }
}

size_t BufferChain::CopyTo(void* dst, size_t n, size_t offset) const {
  char* out = static_cast<char*>(dst);
  size_t copied = 0;
  for (size_t i = ref_begin_; i < ref_end_ && copied < n; ++i) {
    const Ref& ref = refs_[i];
    if (offset >= ref.length) {
      offset -= ref.length;
      continue;
    }
    const size_t take = std::min(ref.length - offset, n - copied);
    std::memcpy(out + copied, ref.block->data() + ref.offset + offset, take);
    copied += take;
    offset = 0;
  }
  return copied;
}

void BufferChain::PopFront(size_t n) {
  n = std::min(n, size_);
  size_ -= n;
  while (n > 0) {
    Ref& front = refs_[ref_begin_];
    if (n < front.length) {
      front.offset += n;
      front.length -= n;
      return;
    }
    n -= front.length;
    held_ -= BlockCharge(front.block);
    front.block->Release();
    ++ref_begin_;
  }
  if (ref_begin_ == ref_end_) ref_begin_ = ref_end_ = 0;
}

void BufferChain::CutFront(size_t n, BufferChain* out) {
  if (out == this) return;
  n = std::min(n, size_);
  size_t slices = 0;  // that the first n bytes span
  for (size_t i = ref_begin_, left = n; i < ref_end_ && left > 0; ++i, ++slices) {
    left -= std::min(left, refs_[i].length);
  }
  ReserveRefs(out->refs_, out->ref_begin_, out->ref_end_, out->ref_capacity_, out->inline_refs_,
              slices);
  while (n > 0) {
    Ref& front = refs_[ref_begin_];
    if (n < front.length) {
      // Split the slice: out shares the block's first n bytes of it.
      front.block->AddRef();
      out->PushRef({front.block, front.offset, n});
      front.offset += n;
      front.length -= n;
      size_ -= n;
      return;
    }
    held_ -= BlockCharge(front.block);
    out->PushRef(front);  // the whole slice moves with its reference
    ++ref_begin_;
    n -= front.length;
    size_ -= front.length;
  }
  if (ref_begin_ == ref_end_) ref_begin_ = ref_end_ = 0;
}

std::string BufferChain::ToString() const {
  std::string s(size_, '\0');
  CopyTo(s.data(), s.size());
  return s;
}

size_t BufferChain::copy_to(void* buf, size_t n, size_t pos) const { return CopyTo(buf, n, pos); }

size_t BufferChain::copy_to(std::string* out, size_t n, size_t pos) const {
  const size_t take = pos >= size_ ? 0 : std::min(n, size_ - pos);
  out->resize(take);
  return CopyTo(out->data(), take, pos);
}

std::ostream& operator<<(std::ostream& os, const BufferChain& chain) {
  for (size_t i = 0; i < chain.span_count(); ++i) {
    const std::span<const char> bytes = chain.span(i);
    os.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  return os;
}

int BufferChain::FillIoVec(struct iovec* iov, int max) const {
  int filled = 0;
  for (size_t i = ref_begin_; i < ref_end_ && filled < max; ++i, ++filled) {
    iov[filled].iov_base = refs_[i].block->data() + refs_[i].offset;
    iov[filled].iov_len = refs_[i].length;
  }
  return filled;
}

size_t BufferChain::span_count() const noexcept { return ref_end_ - ref_begin_; }

std::span<const char> BufferChain::span(size_t i) const {
  if (i >= span_count()) throw std::out_of_range("BufferChain::span: index out of range");
  const Ref& ref = ref_at(i);
  return {ref.block->data() + ref.offset, ref.length};
}

}  // namespace arenarpc::net
