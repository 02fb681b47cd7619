#pragma once
// BufferChain: a byte queue made of reference-counted blocks (pages from the engine's page pool).
// Cutting a prefix off moves or shares blocks, never copies bytes. Not thread-safe: one owner.

#include <google/protobuf/io/zero_copy_stream.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>

#include "arenarpc/memory/page_allocator.h"

namespace arenarpc::net {

// Page allocator used for I/O buffers unless one is given. Default: a process-wide cached pool
// of 8 KiB pages. SetIoPageAllocator must be called before any BufferChain exists (or not at all).
memory::PageAllocator& IoPageAllocator();
void SetIoPageAllocator(memory::PageAllocator* pages);

class BufferChain {
 public:
  BufferChain() = default;
  explicit BufferChain(memory::PageAllocator* pages);
  BufferChain(BufferChain&&) noexcept;
  BufferChain& operator=(BufferChain&&) noexcept;
  BufferChain(const BufferChain&) = delete;  // use ShareFrom to share blocks explicitly
  BufferChain& operator=(const BufferChain&) = delete;
  ~BufferChain();

  size_t size() const noexcept;
  bool empty() const noexcept { return size() == 0; }
  // Memory the chain's readable bytes pin: each slice counts its whole block (a page, or a large
  // block's allocation), so 25 bytes sharing nothing else cost a page. Backpressure bounds this,
  // not size(). A block shared by several slices is counted once per slice (an over-estimate).
  size_t held_bytes() const noexcept { return held_; }
  void clear() noexcept;

  // --- writing at the back
  void Append(std::string_view bytes);
  void Append(BufferChain&& other);             // moves other's blocks; other becomes empty
  void AppendShared(const BufferChain& other);  // shares other's blocks (refcount), no copy
  // Writable space at the back (at least min_bytes, in one block); then Commit what was written.
  std::span<char> PrepareWrite(size_t min_bytes = 1);
  void CommitWrite(size_t n);

  // --- reading at the front
  size_t CopyTo(void* dst, size_t n, size_t offset = 0) const;  // peek; returns bytes copied
  void PopFront(size_t n);
  void CutFront(size_t n, BufferChain* out);  // moves the first n bytes to the back of out
  std::string ToString() const;

  // --- butil::IOBuf's names, so that ported brpc code compiles (same semantics as above)
  void append(std::string_view bytes) { Append(bytes); }
  void append(const void* data, size_t n) { Append({static_cast<const char*>(data), n}); }
  void append(const BufferChain& other) { AppendShared(other); }  // IOBuf shares blocks too
  void append(BufferChain&& other) { Append(std::move(other)); }
  size_t length() const noexcept { return size(); }
  std::string to_string() const { return ToString(); }
  // Copies up to n bytes from offset pos; returns the count copied.
  size_t copy_to(void* buf, size_t n = SIZE_MAX, size_t pos = 0) const;
  size_t copy_to(std::string* out, size_t n = SIZE_MAX, size_t pos = 0) const;

  // Readable bytes as iovecs for writev/sendmsg (up to max entries); returns the count filled.
  int FillIoVec(struct iovec* iov, int max) const;
  // Number of contiguous spans and access to them (for Asio const_buffer sequences).
  size_t span_count() const noexcept;
  std::span<const char> span(size_t i) const;

 private:
  friend class BufferChainInputStream;
  friend class BufferChainOutputStream;
  struct Block;  // refcounted storage, defined in buffer_chain.cc
  struct Ref {   // a readable slice of one block
    Block* block;
    size_t offset;
    size_t length;
  };
  static constexpr size_t kInlineRefs = 2;  // most chains (a frame's payload) hold one or two

  memory::PageAllocator& pages() const noexcept;
  Ref& ref_at(size_t i) const noexcept { return refs_[ref_begin_ + i]; }
  void PushRef(const Ref& ref);  // takes over one reference count of ref.block
  static size_t BlockCharge(const Block* block) noexcept;  // held_bytes() of one slice
  void ReleaseRefs() noexcept;
  void ReleaseWriteBlock() noexcept;
  void MoveFrom(BufferChain& other) noexcept;

  memory::PageAllocator* pages_ = nullptr;  // nullptr = IoPageAllocator()
  // Readable slices in order: refs_[ref_begin_, ref_end_). refs_ points at inline_refs_ until the
  // chain outgrows it (then at a heap array owned by this chain).
  Ref* refs_ = inline_refs_;
  size_t ref_begin_ = 0, ref_end_ = 0, ref_capacity_ = kInlineRefs;
  size_t size_ = 0;
  size_t held_ = 0;  // see held_bytes()
  Ref inline_refs_[kInlineRefs] = {};
  // The block this chain appends into (it holds one reference on it). Only the chain owning the
  // write block ever writes into a block, and only past every shared slice, so chains that share
  // the block's earlier bytes on other threads never race with it.
  Block* write_block_ = nullptr;
};

// Streams the bytes (as butil::IOBuf does), e.g. `LOG(INFO) << cntl->request_attachment()`.
std::ostream& operator<<(std::ostream& os, const BufferChain& chain);

// Reads a BufferChain's bytes (front to back) without copying them into one string.
class BufferChainInputStream final : public google::protobuf::io::ZeroCopyInputStream {
 public:
  explicit BufferChainInputStream(const BufferChain& chain, size_t limit = SIZE_MAX);
  bool Next(const void** data, int* size) override;
  void BackUp(int count) override;
  bool Skip(int count) override;
  int64_t ByteCount() const override;

 private:
  const BufferChain& chain_;
  size_t limit_, index_ = 0, offset_in_span_ = 0;
  int64_t bytes_ = 0;
};

// Appends to a BufferChain, handing out the chain's own block space (serialization writes into
// I/O buffers directly). Leave the chain alone while the stream is alive: bytes handed out by the
// last Next() are committed only by BackUp(), the next Next() or the destructor.
class BufferChainOutputStream final : public google::protobuf::io::ZeroCopyOutputStream {
 public:
  explicit BufferChainOutputStream(BufferChain* chain);
  ~BufferChainOutputStream() override;  // commits what was written
  bool Next(void** data, int* size) override;
  void BackUp(int count) override;
  int64_t ByteCount() const override;

 private:
  BufferChain* chain_;
  int64_t bytes_ = 0;
  size_t pending_ = 0;  // handed out by the last Next() and not yet committed
};

}  // namespace arenarpc::net

namespace arenarpc {
// brpc's attachments are butil::IOBuf; ported code may say arenarpc::IOBuf.
using IOBuf = net::BufferChain;
}  // namespace arenarpc
