#include <google/protobuf/arena.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "arenarpc/memory/cached_page_allocator.h"
#include "arenarpc/memory/paged_arena.h"
#include "echo/payload_generator.h"

namespace arenarpc::memory {
namespace {

using example::EchoRequest;

TEST(PagedArena, BlocksComeFromThePoolAndAllReturn) {
  auto pages = std::make_shared<CachedPageAllocator>(PagePoolOptions{4096, 1024, 64});
  PagedArenaFactory factory(pages);
  {
    PagedArena arena(factory);
    auto* request = google::protobuf::Arena::CreateMessage<EchoRequest>(arena.get());
    example::PayloadGenerator(8, 7).Fill(request);
    ASSERT_GT(request->payload().result_size(), 0);
    const PageAllocatorStats s = pages->stats();
    EXPECT_GT(s.pages_outstanding, 10u);  // the payload needs many pages
    // Blocks grow at most to one page, so almost every allocated byte is a pool page.
    EXPECT_LE(arena->SpaceAllocated(), (s.pages_outstanding + 4) * 4096);
  }
  EXPECT_EQ(pages->stats().pages_outstanding, 0u);
  const uint64_t misses = pages->stats().cache_misses;
  {
    PagedArena arena(factory);
    example::PayloadGenerator(8, 7).Fill(google::protobuf::Arena::CreateMessage<EchoRequest>(arena.get()));
  }
  EXPECT_EQ(pages->stats().cache_misses, misses) << "the second identical call must hit the cache";
  EXPECT_EQ(pages->stats().pages_outstanding, 0u);
}

TEST(PagedArena, ResetReturnsEveryPageButTheFirst) {
  auto pages = std::make_shared<CachedPageAllocator>(PagePoolOptions{4096, 1024, 64});
  PagedArenaFactory factory(pages);
  {
    PagedArena arena(factory);
    for (int round = 0; round < 3; ++round) {
      example::PayloadGenerator(6, round).Fill(
          google::protobuf::Arena::CreateMessage<EchoRequest>(arena.get()));
      EXPECT_GT(pages->stats().pages_outstanding, 2u);
      arena->Reset();
      // The first page holds the Arena object and its user-owned initial block.
      EXPECT_EQ(pages->stats().pages_outstanding, 1u);
    }
  }
  EXPECT_EQ(pages->stats().pages_outstanding, 0u);
}

TEST(PagedArena, LargerThanPageAllocationsGoToTheHeap) {
  auto pages = std::make_shared<CachedPageAllocator>(PagePoolOptions{4096, 64, 8});
  PagedArenaFactory factory(pages);
  {
    PagedArena arena(factory);
    void* big = google::protobuf::Arena::CreateArray<char>(arena.get(), 64 * 1024);
    std::memset(big, 0x5a, 64 * 1024);
    EXPECT_EQ(pages->stats().pages_outstanding, 1u);  // only the arena's own first page
    EXPECT_GE(arena->SpaceAllocated(), 64u * 1024);
  }
  EXPECT_EQ(pages->stats().pages_outstanding, 0u);
}

TEST(PagedArena, TinyPagesStillWork) {
  auto pages = std::make_shared<CachedPageAllocator>(PagePoolOptions{256, 64, 8});
  PagedArenaFactory factory(pages);
  {
    PagedArena arena(factory);
    example::PayloadGenerator(3, 1).Fill(google::protobuf::Arena::CreateMessage<EchoRequest>(arena.get()));
  }
  EXPECT_EQ(pages->stats().pages_outstanding, 0u);
}

TEST(PagedArena, SlotsAreBoundedAndReleased) {
  auto pages = std::make_shared<CachedPageAllocator>(PagePoolOptions{4096, 4, 0});
  const int before = PagedArenaFactory::slots_in_use();
  std::vector<std::unique_ptr<PagedArenaFactory>> factories;
  for (int i = before; i < PagedArenaFactory::kMaxFactories; ++i) {
    factories.push_back(std::make_unique<PagedArenaFactory>(pages));
  }
  try {
    PagedArenaFactory one_too_many(pages);
    FAIL() << "slot limit not enforced";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("slots"), std::string::npos) << e.what();
  }
  factories.pop_back();
  EXPECT_NO_THROW(PagedArenaFactory{pages});
  factories.clear();
  EXPECT_EQ(PagedArenaFactory::slots_in_use(), before);
  EXPECT_THROW(PagedArenaFactory{nullptr}, std::invalid_argument);
}

}  // namespace
}  // namespace arenarpc::memory
