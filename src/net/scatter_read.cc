#include "net/scatter_read.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace arenarpc::net {

ScatterRead::ScatterRead(BufferChain& target, size_t max_bytes) : target_(target) {
  auto add = [this, max_bytes](std::span<char> space) {
    const size_t room = std::min(space.size(), max_bytes - size_);
    buffers_[count_++] = asio::mutable_buffer(space.data(), room);
    size_ += room;
  };
  add(target.PrepareWrite(1));
  while (size_ < max_bytes && count_ < kMaxSpans) add(pages_[count_ - 1].PrepareWrite(1));
}

void ScatterRead::Commit(size_t n) {
  if (n > size_) throw std::logic_error("ScatterRead::Commit: more bytes than its spans hold");
  const size_t first = std::min(n, buffers_[0].size());
  target_.CommitWrite(first);
  n -= first;
  for (size_t i = 1; i < count_ && n > 0; ++i) {
    const size_t take = std::min(n, buffers_[i].size());
    BufferChain& page = pages_[i - 1];
    page.CommitWrite(take);
    target_.Append(std::move(page));  // takes the page over as its write block
    n -= take;
  }
}

}  // namespace arenarpc::net
