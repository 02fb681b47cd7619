// ReleaseFreeMemoryToSystem: what a strategy gave back to malloc leaves the RSS.
#include "memory/free_memory_release.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "resident_bytes.h"

namespace arenarpc::memory {
namespace {

#if defined(__GLIBC__) && !defined(ARENARPC_SANITIZED)
TEST(FreeMemoryRelease, FreedBlocksBetweenLiveOnesLeaveTheRss) {
  // 32 MiB of 64 KiB blocks (under glibc's mmap threshold: they come from the heap), written to;
  // then every other one freed: a freed block lies between two live ones, so it cannot merge
  // with another nor with the heap's top, and free() returns none of its pages. They stay
  // resident (16 MiB) until malloc is asked to return them.
  constexpr size_t kBlock = 64 << 10, kBlocks = 512;
  std::vector<std::unique_ptr<char[]>> blocks;
  blocks.reserve(kBlocks);
  for (size_t i = 0; i < kBlocks; ++i) {
    blocks.emplace_back(new char[kBlock]);
    std::memset(blocks.back().get(), 1, kBlock);
  }
  for (size_t i = 1; i < kBlocks; i += 2) blocks[i].reset();
  const uint64_t before = ResidentBytes();
  ASSERT_GT(before, 0u);
  const FreeMemoryRelease asked = ReleaseFreeMemoryToSystem();
  const uint64_t after = ResidentBytes();
  EXPECT_TRUE(asked.glibc);
  EXPECT_GE(before - std::min(before, after), uint64_t{8} << 20)
      << "RSS " << before << " -> " << after;
}
#endif

}  // namespace
}  // namespace arenarpc::memory
