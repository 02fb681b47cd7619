#pragma once
// ScatterRead: the space for one scatter read (readv/recvmsg) into a BufferChain (the rest of
// its write block, then fresh I/O pages), so that a socket holding a large frame is read with one
// system call per kMaxSpans pages instead of one per page. Commit(n) appends what the read wrote;
// the pages it did not reach go back to the pool when the ScatterRead ends.

#include <asio/buffer.hpp>

#include <array>
#include <cstddef>
#include <span>

#include "arenarpc/buffer_chain.h"

namespace arenarpc::net {

class ScatterRead {
 public:
  static constexpr size_t kMaxSpans = 16;

  // Up to max_bytes (> 0) of space; `target` appends from the I/O page pool (as a
  // Connection's input does) and must outlive this.
  ScatterRead(BufferChain& target, size_t max_bytes);
  ScatterRead(const ScatterRead&) = delete;
  ScatterRead& operator=(const ScatterRead&) = delete;

  std::span<const asio::mutable_buffer> buffers() const noexcept {
    return {buffers_.data(), count_};
  }
  size_t size() const noexcept { return size_; }  // bytes of all spans
  // The read wrote n bytes (<= size()) into the spans, in order: they join the target, and the
  // page they end in becomes its write block (the next read continues it).
  void Commit(size_t n);

 private:
  BufferChain& target_;
  std::array<BufferChain, kMaxSpans - 1> pages_;  // one fresh page each, after the target's
  std::array<asio::mutable_buffer, kMaxSpans> buffers_;
  size_t count_ = 0, size_ = 0;
};

}  // namespace arenarpc::net
