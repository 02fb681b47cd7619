#include "net/io_page_sweeper.h"

#include <asio/post.hpp>

#include "arenarpc/buffer_chain.h"
#include "arenarpc/memory/cached_page_allocator.h"

namespace arenarpc::net {

IoPageSweeper::IoPageSweeper(asio::io_context& loop)
    : pages_(dynamic_cast<memory::CachedPageAllocator*>(&IoPageAllocator())),
      strand_(asio::make_strand(loop)), timer_(strand_) {
  if (pages_ == nullptr || pages_->options().idle_release.count() <= 0) return;
  asio::post(strand_, [this] { Arm(); });
}

void IoPageSweeper::Arm() {
  if (stopped_) return;
  timer_.expires_after(pages_->options().idle_release);
  timer_.async_wait([this](const asio::error_code& error) {
    if (error || stopped_) return;
    pages_->ReleaseIdle();
    Arm();
  });
}

void IoPageSweeper::Stop() {
  asio::post(strand_, [this] {
    stopped_ = true;
    timer_.cancel();
  });
}

}  // namespace arenarpc::net
