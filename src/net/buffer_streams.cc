// protobuf zero-copy streams over a BufferChain: parse straight from received blocks, serialize
// straight into output blocks.
#include <algorithm>
#include <climits>

#include "arenarpc/buffer_chain.h"

namespace arenarpc::net {

BufferChainInputStream::BufferChainInputStream(const BufferChain& chain, size_t limit)
    : chain_(chain), limit_(std::min(limit, chain.size())) {}

bool BufferChainInputStream::Next(const void** data, int* size) {
  while (static_cast<size_t>(bytes_) < limit_ && index_ < chain_.span_count()) {
    const std::span<const char> span = chain_.span(index_);
    if (offset_in_span_ >= span.size()) {
      ++index_;
      offset_in_span_ = 0;
      continue;
    }
    size_t n = std::min({span.size() - offset_in_span_, limit_ - static_cast<size_t>(bytes_),
                         static_cast<size_t>(INT_MAX)});
    *data = span.data() + offset_in_span_;
    *size = static_cast<int>(n);
    offset_in_span_ += n;
    bytes_ += static_cast<int64_t>(n);
    return true;
  }
  return false;
}

void BufferChainInputStream::BackUp(int count) {
  // protobuf only backs up into the buffer returned by the last Next(), which lies in the span at
  // index_ (Next never advances index_ past the span it returns from).
  const size_t n = std::min<size_t>(count > 0 ? count : 0, offset_in_span_);
  offset_in_span_ -= n;
  bytes_ -= static_cast<int64_t>(n);
}

bool BufferChainInputStream::Skip(int count) {
  if (count < 0) return false;
  size_t left = static_cast<size_t>(count);
  while (left > 0) {
    if (static_cast<size_t>(bytes_) >= limit_ || index_ >= chain_.span_count()) return false;
    const size_t span_size = chain_.span(index_).size();
    const size_t n =
        std::min({span_size - offset_in_span_, left, limit_ - static_cast<size_t>(bytes_)});
    offset_in_span_ += n;
    bytes_ += static_cast<int64_t>(n);
    left -= n;
    if (offset_in_span_ == span_size) {
      ++index_;
      offset_in_span_ = 0;
    }
  }
  return true;
}

int64_t BufferChainInputStream::ByteCount() const { return bytes_; }

BufferChainOutputStream::BufferChainOutputStream(BufferChain* chain) : chain_(chain) {}

BufferChainOutputStream::~BufferChainOutputStream() { chain_->CommitWrite(pending_); }

bool BufferChainOutputStream::Next(void** data, int* size) {
  chain_->CommitWrite(pending_);
  pending_ = 0;
  std::span<char> space = chain_->PrepareWrite(1);
  const size_t n = std::min<size_t>(space.size(), INT_MAX);
  *data = space.data();
  *size = static_cast<int>(n);
  pending_ = n;
  bytes_ += static_cast<int64_t>(n);
  return true;
}

void BufferChainOutputStream::BackUp(int count) {
  const size_t n = std::min<size_t>(count > 0 ? count : 0, pending_);
  pending_ -= n;
  bytes_ -= static_cast<int64_t>(n);
  chain_->CommitWrite(pending_);
  pending_ = 0;
}

int64_t BufferChainOutputStream::ByteCount() const { return bytes_; }

}  // namespace arenarpc::net
