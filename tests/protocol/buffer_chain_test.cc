#include "arenarpc/buffer_chain.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "counting_pages.h"

namespace arenarpc::net {
namespace {

using testing::CountingPages;

std::string Pattern(size_t n, int seed = 0) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + seed) % 26);
  return s;
}

TEST(BufferChain, EmptyByDefault) {
  BufferChain chain;
  EXPECT_TRUE(chain.empty());
  EXPECT_EQ(chain.size(), 0u);
  EXPECT_EQ(chain.span_count(), 0u);
  EXPECT_EQ(chain.ToString(), "");
  char c;
  EXPECT_EQ(chain.CopyTo(&c, 1), 0u);
  EXPECT_THROW(chain.span(0), std::out_of_range);
}

TEST(BufferChain, AppendAcrossPagesKeepsBytesAndReturnsPages) {
  CountingPages pages(256);
  {
    BufferChain chain(&pages);
    const std::string data = Pattern(5000);
    for (size_t i = 0; i < data.size(); i += 37) chain.Append(std::string_view(data).substr(i, 37));
    EXPECT_EQ(chain.size(), data.size());
    EXPECT_EQ(chain.ToString(), data);
    EXPECT_GT(chain.span_count(), 10u);  // 256-byte pages: many blocks
    // Consecutive small appends into one block extend one slice instead of adding slices.
    EXPECT_LE(chain.span_count(), data.size() / (256 - 64) + 1);
    EXPECT_GT(pages.outstanding(), 0u);
  }
  EXPECT_EQ(pages.outstanding(), 0u);
}

TEST(BufferChain, HeldBytesCountWholePagesOfTheSlices) {
  CountingPages pages(256);
  BufferChain chain(&pages);
  EXPECT_EQ(chain.held_bytes(), 0u);
  chain.Append("tiny");  // 4 bytes pin a whole page
  EXPECT_EQ(chain.held_bytes(), 256u);
  chain.Append("more");  // same page, same slice
  EXPECT_EQ(chain.held_bytes(), 256u);
  // Twenty frames of their own pages, linked (not copied) into one queue: twenty pages.
  BufferChain queue(&pages);
  for (int i = 0; i < 20; ++i) {
    BufferChain frame(&pages);
    frame.Append("25-byte reply frame .....");
    queue.Append(std::move(frame));
  }
  EXPECT_EQ(queue.held_bytes(), 20u * 256);
  queue.PopFront(25 * 10);  // ten slices gone
  EXPECT_EQ(queue.held_bytes(), 10u * 256);
  queue.PopFront(3);        // a slice cut short still pins its page
  EXPECT_EQ(queue.held_bytes(), 10u * 256);
  BufferChain front(&pages);
  queue.CutFront(25 * 2 - 3, &front);
  EXPECT_EQ(queue.held_bytes(), 8u * 256);
  EXPECT_EQ(front.held_bytes(), 2u * 256);
  BufferChain moved(std::move(queue));
  EXPECT_EQ(queue.held_bytes(), 0u);
  EXPECT_EQ(moved.held_bytes(), 8u * 256);
  moved.clear();
  EXPECT_EQ(moved.held_bytes(), 0u);
  // A large block is counted as its allocation.
  BufferChain big(&pages);
  big.Append(std::string(256 * 16, 'x'));
  EXPECT_GE(big.held_bytes(), 256u * 16);
  EXPECT_LT(big.held_bytes(), 256u * 17);
}

TEST(BufferChain, BigAppendUsesOneHeapBlock) {
  CountingPages pages(256);
  BufferChain chain(&pages);
  const std::string big = Pattern(100000);
  chain.Append(big);
  EXPECT_EQ(chain.span_count(), 1u);
  EXPECT_EQ(pages.stats().allocations, 0u);
  EXPECT_EQ(chain.ToString(), big);
}

TEST(BufferChain, PopFrontAndCopyToWithOffset) {
  CountingPages pages(256);
  BufferChain chain(&pages);
  const std::string data = Pattern(1000);
  chain.Append(data);
  std::string peek(50, '\0');
  EXPECT_EQ(chain.CopyTo(peek.data(), 50, 300), 50u);
  EXPECT_EQ(peek, data.substr(300, 50));
  EXPECT_EQ(chain.CopyTo(peek.data(), 50, 990), 10u);  // only 10 left past the offset
  chain.PopFront(333);
  EXPECT_EQ(chain.size(), 667u);
  EXPECT_EQ(chain.ToString(), data.substr(333));
  chain.PopFront(10000);  // more than there is: empties
  EXPECT_TRUE(chain.empty());
  EXPECT_EQ(pages.outstanding(), 1u);  // only the write block is kept
}

TEST(BufferChain, CutFrontSharesWithoutCopyAndSurvivesLaterWrites) {
  CountingPages pages(256);
  BufferChain in(&pages);
  in.Append("hello world");
  const char* first_byte = in.span(0).data();
  BufferChain frame(&pages);
  in.CutFront(5, &frame);
  EXPECT_EQ(frame.ToString(), "hello");
  EXPECT_EQ(frame.span(0).data(), first_byte);  // same memory: no copy
  EXPECT_EQ(in.ToString(), " world");
  // The input keeps writing into the same block; the cut frame must not see it.
  in.Append("!!");
  EXPECT_EQ(in.ToString(), " world!!");
  EXPECT_EQ(frame.ToString(), "hello");
  // Appending to the frame must not write into the shared block over the input's bytes.
  frame.Append("XYZ");
  EXPECT_EQ(frame.ToString(), "helloXYZ");
  EXPECT_EQ(in.ToString(), " world!!");
  in.CutFront(100, &frame);  // more than there is: everything
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(frame.ToString(), "helloXYZ world!!");
}

TEST(BufferChain, CutFrontAcrossBlocks) {
  CountingPages pages(256);
  BufferChain in(&pages);
  const std::string data = Pattern(1500, 3);  // < 8 pages: stays in pages
  in.Append(data);
  std::vector<BufferChain> parts;
  size_t pos = 0;
  for (size_t n : {1u, 191u, 192u, 500u, 7u, 300u}) {
    parts.emplace_back(&pages);
    in.CutFront(n, &parts.back());
    EXPECT_EQ(parts.back().ToString(), data.substr(pos, n));
    pos += n;
  }
  EXPECT_EQ(in.ToString(), data.substr(pos));
  in.clear();
  parts.erase(parts.begin(), parts.begin() + 3);
  EXPECT_GT(pages.outstanding(), 0u);
  parts.clear();
  EXPECT_EQ(pages.outstanding(), 1u);  // in's write block
}

TEST(BufferChain, CuttingAFrameOfManySlicesKeepsItsBytes) {
  // A frame read page by page is many slices: the destination reserves them at once.
  CountingPages pages(256);
  BufferChain in(&pages);
  const std::string data = Pattern(40 * 150, 9);
  for (size_t i = 0; i < data.size(); i += 150) {
    BufferChain piece(&pages);
    piece.Append(std::string_view(data).substr(i, 150));
    in.Append(std::move(piece));  // each its own block: 40 slices
  }
  ASSERT_EQ(40u, in.span_count());
  BufferChain frame(&pages), rest(&pages);
  in.CutFront(35 * 150 + 20, &frame);
  EXPECT_EQ(36u, frame.span_count());
  EXPECT_EQ(data.substr(0, 35 * 150 + 20), frame.ToString());
  in.CutFront(in.size(), &rest);
  EXPECT_EQ(data.substr(35 * 150 + 20), rest.ToString());
  EXPECT_TRUE(in.empty());
}

TEST(BufferChain, AppendSharedIsIndependentOfTheSource) {
  CountingPages pages(256);
  BufferChain a(&pages), b(&pages);
  a.Append(Pattern(600));
  b.Append("head:");
  b.AppendShared(a);
  EXPECT_EQ(b.ToString(), "head:" + Pattern(600));
  a.PopFront(100);
  a.Append("tail");
  EXPECT_EQ(b.ToString(), "head:" + Pattern(600));
  a.clear();
  EXPECT_EQ(b.ToString(), "head:" + Pattern(600));
  b.AppendShared(b);  // self-share doubles
  EXPECT_EQ(b.ToString(), "head:" + Pattern(600) + "head:" + Pattern(600));
}

TEST(BufferChain, AppendMoveTransfersBlocks) {
  CountingPages pages(256);
  BufferChain a(&pages), b(&pages);
  a.Append("abc");
  b.Append(Pattern(700));
  const uint64_t before = pages.stats().allocations;
  a.Append(std::move(b));
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(a.ToString(), "abc" + Pattern(700));
  a.Append("z");  // continues in b's former write block: no new page
  EXPECT_EQ(pages.stats().allocations, before);
  EXPECT_EQ(a.ToString(), "abc" + Pattern(700) + "z");
  a.Append(std::move(a));  // self-move is a no-op
  EXPECT_EQ(a.size(), 704u);
}

TEST(BufferChain, MoveConstructAndAssign) {
  CountingPages pages(256);
  {
    BufferChain small(&pages);
    small.Append("xy");  // inline slices
    BufferChain big(&pages);
    big.Append(Pattern(2000));  // heap slice array
    BufferChain a(std::move(small));
    BufferChain b(std::move(big));
    EXPECT_TRUE(small.empty());
    EXPECT_TRUE(big.empty());
    EXPECT_EQ(a.ToString(), "xy");
    EXPECT_EQ(b.ToString(), Pattern(2000));
    a = std::move(b);
    EXPECT_EQ(a.ToString(), Pattern(2000));
    b = std::move(a);
    EXPECT_EQ(b.ToString(), Pattern(2000));
    small.Append("reuse after move");
    EXPECT_EQ(small.ToString(), "reuse after move");
    b = std::move(b);  // self-assignment keeps the contents
    EXPECT_EQ(b.ToString(), Pattern(2000));
  }
  EXPECT_EQ(pages.outstanding(), 0u);
}

TEST(BufferChain, PrepareAndCommitWrite) {
  CountingPages pages(256);
  BufferChain chain(&pages);
  std::span<char> space = chain.PrepareWrite(10);
  ASSERT_GE(space.size(), 10u);
  std::memcpy(space.data(), "0123456789", 10);
  chain.CommitWrite(4);
  EXPECT_EQ(chain.ToString(), "0123");
  std::span<char> more = chain.PrepareWrite(1000);  // larger than a page: heap block
  ASSERT_GE(more.size(), 1000u);
  EXPECT_THROW(chain.CommitWrite(more.size() + 1), std::logic_error);
  chain.CommitWrite(0);
  EXPECT_EQ(chain.size(), 4u);
}

TEST(BufferChain, FillIoVecMatchesSpans) {
  CountingPages pages(256);
  BufferChain chain(&pages);
  const std::string data = Pattern(1000, 5);
  chain.Append(data);
  std::vector<iovec> iov(64);
  const int n = chain.FillIoVec(iov.data(), static_cast<int>(iov.size()));
  ASSERT_EQ(static_cast<size_t>(n), chain.span_count());
  std::string joined;
  for (int i = 0; i < n; ++i) {
    joined.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
    EXPECT_EQ(iov[i].iov_base, chain.span(i).data());
  }
  EXPECT_EQ(joined, data);
  EXPECT_EQ(chain.FillIoVec(iov.data(), 2), 2);
}

TEST(BufferChain, DefaultUsesIoPageAllocator) {
  BufferChain chain;
  chain.Append("x");
  EXPECT_GT(IoPageAllocator().page_size(), 0u);
  EXPECT_GE(IoPageAllocator().stats().pages_outstanding, 1u);
  EXPECT_EQ(chain.ToString(), "x");
}

// Blocks are shared across threads: a frame cut on the I/O thread is read and released on a
// worker while the I/O thread keeps appending to the same block. Run under TSan.
void ShareAcrossThreads(memory::PageAllocator* pages) {
  BufferChain in(pages);
  std::vector<std::thread> workers;
  std::atomic<int> bad{0};
  for (int i = 0; i < 8; ++i) {
    in.Append(Pattern(100, i));
    BufferChain frame(pages);
    in.CutFront(100, &frame);
    BufferChain copy(pages);
    copy.AppendShared(frame);
    workers.emplace_back([f = std::move(frame), c = std::move(copy), i, &bad]() mutable {
      if (f.ToString() != Pattern(100, i) || c.ToString() != Pattern(100, i)) bad.fetch_add(1);
      f.Append("worker-side append");
      f.clear();
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(BufferChain, SharedBlocksAcrossThreads) {
  CountingPages pages(4096);
  ShareAcrossThreads(&pages);
  EXPECT_EQ(pages.outstanding(), 0u);
}

TEST(BufferChain, SharedBlocksAcrossThreadsWithTheIoPool) {
  const uint64_t before = IoPageAllocator().stats().pages_outstanding;
  ShareAcrossThreads(nullptr);
  EXPECT_EQ(IoPageAllocator().stats().pages_outstanding, before);
}

}  // namespace
}  // namespace arenarpc::net
