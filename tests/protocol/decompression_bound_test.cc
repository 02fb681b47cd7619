// A decompression bomb stops inflating at the cap. Every byte Decompress keeps lands in memory
// from operator new (I/O pages from this binary's own page allocator, installed before any chain
// exists, large blocks, snappy's scratch), and this binary counts what operator new hands out
// while a call runs: that bounds the bytes the call inflated.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <string_view>

#include "arenarpc/buffer_chain.h"
#include "chain_util.h"
#include "counting_pages.h"
#include "protocol/compression.h"
#include "protocol/rpc_meta.pb.h"

namespace {
std::atomic<bool> counting{false};
std::atomic<size_t> counted_bytes{0};

void* Allocate(size_t n, size_t alignment) {
  if (counting.load(std::memory_order_relaxed)) counted_bytes.fetch_add(n);
  const size_t size = (n + alignment - 1) / alignment * alignment;
  void* p = alignment <= alignof(std::max_align_t) ? std::malloc(size ? size : 1)
                                                    : std::aligned_alloc(alignment, size ? size : alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(size_t n) { return Allocate(n, alignof(std::max_align_t)); }
void* operator new(size_t n, std::align_val_t a) { return Allocate(n, static_cast<size_t>(a)); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace arenarpc::protocol {
namespace {

using arenarpc::testing::Chain;

constexpr size_t kPage = 4096;

arenarpc::testing::CountingPages& Pages() {
  static arenarpc::testing::CountingPages pages(kPage);
  return pages;
}
// Before main(), so before any BufferChain exists (SetIoPageAllocator's precondition).
const bool installed = (net::SetIoPageAllocator(&Pages()), true);

std::string Compressed(int type, std::string_view plain) {
  net::BufferChain out;
  std::string error;
  EXPECT_TRUE(Compress(type, Chain(plain), &out, &error)) << error;
  return out.ToString();
}

// What operator new handed out (and how many I/O pages) while `in` decompressed with `cap`, and
// whether it succeeded.
struct Inflation {
  bool ok = false;
  size_t new_bytes = 0;
  uint64_t pages = 0;
};
Inflation Inflate(int type, const net::BufferChain& in, size_t cap) {
  std::string error;
  error.reserve(256);  // the error text's own allocation is not inflation
  Inflation result;
  {
    net::BufferChain out;
    const uint64_t pages_before = Pages().stats().allocations;
    counted_bytes.store(0);
    counting.store(true);
    result.ok = Decompress(type, in, &out, &error, cap);
    counting.store(false);
    result.new_bytes = counted_bytes.load();
    result.pages = Pages().stats().allocations - pages_before;
  }
  return result;
}

TEST(DecompressionBound, TheCountingAllocatorSeesWhatIsInflated) {
  ASSERT_TRUE(installed);
  ASSERT_EQ(&net::IoPageAllocator(), &Pages());
  const std::string plain(1 << 20, '\0');
  for (int type : {COMPRESS_TYPE_SNAPPY, COMPRESS_TYPE_GZIP, COMPRESS_TYPE_ZLIB}) {
    const net::BufferChain in = Chain(Compressed(type, plain));
    const Inflation full = Inflate(type, in, plain.size());
    EXPECT_TRUE(full.ok) << type;
    EXPECT_GE(full.new_bytes, plain.size()) << type;  // 1 MiB written, all of it counted
  }
}

TEST(DecompressionBound, ABombStopsAtTheCap) {
  constexpr size_t kCap = 100000;  // 25 pages; the bomb inflates to 32 MiB
  const std::string plain(32u << 20, '\0');
  for (int type : {COMPRESS_TYPE_SNAPPY, COMPRESS_TYPE_GZIP, COMPRESS_TYPE_ZLIB}) {
    const net::BufferChain in = Chain(Compressed(type, plain));
    ASSERT_LT(in.size(), 2u << 20) << type;
    const Inflation bomb = Inflate(type, in, kCap);
    EXPECT_FALSE(bomb.ok) << type;
    // At most the cap plus the one page that crosses it (and small bookkeeping).
    EXPECT_LE(bomb.new_bytes, kCap + kPage + 1024) << type;
    EXPECT_LE(bomb.pages * kPage, kCap + kPage) << type;
  }
}

}  // namespace
}  // namespace arenarpc::protocol
