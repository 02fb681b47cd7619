// The adapter's old spelling (arenarpc/grpc/..., namespace arenarpc::grpc) still compiles for one
// release and names the same types as arenarpc::grpc_memory.
#include <gtest/gtest.h>

#include <type_traits>

#include "arenarpc/grpc/message_allocator.h"
#include "arenarpc/grpc/service_memory.h"
#include "arenarpc/grpc_memory/message_allocator.h"

TEST(GrpcMemoryDeprecatedSpelling, NamesTheSameAdapter) {
  static_assert(
      std::is_same_v<arenarpc::grpc::ServiceMemory, arenarpc::grpc_memory::ServiceMemory>);
  auto strategy = arenarpc::grpc::MakeStrategy("reuse", {}, nullptr);
  ASSERT_NE(nullptr, strategy);
  EXPECT_EQ("reuse", strategy->name());
}
