// FiberShares: the per-connection and streaming shares of max_fibers, and tickets that give their
// counts back exactly once.
#include "server/fiber_shares.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "arenarpc/server.h"

namespace arenarpc::server {
namespace {

using Connection = FiberShares::Connection;

TEST(FiberSharesTest, DefaultsFollowMaxFibers) {
  ServerOptions options;
  options.max_fibers = 256;
  const FiberShares::Limits limits = FiberShares::LimitsFor(options);
  EXPECT_EQ(limits.per_connection, 0);
  EXPECT_EQ(limits.streaming, 128);
  EXPECT_EQ(limits.streaming_per_connection, 100);
  options.max_fibers = 1;
  EXPECT_EQ(FiberShares::LimitsFor(options).streaming, 1);
  options.max_streaming_fibers = 7;
  EXPECT_EQ(FiberShares::LimitsFor(options).streaming, 7);
}

TEST(FiberSharesTest, ConnectionShareRefusesPastItAndComesBack) {
  FiberShares shares({/*per_connection=*/2, /*streaming=*/10, /*streaming_per_connection=*/10});
  auto a = std::make_shared<Connection>(), b = std::make_shared<Connection>();
  std::string refusal;
  FiberShares::Ticket first = shares.TryTake(a, false, &refusal);
  FiberShares::Ticket second = shares.TryTake(a, false, &refusal);
  ASSERT_TRUE(first && second);
  EXPECT_FALSE(shares.TryTake(a, false, &refusal));
  EXPECT_EQ(refusal, "Reached server's max_fibers_per_connection=2");
  EXPECT_EQ(a->fibers.load(), 2);
  EXPECT_TRUE(shares.TryTake(b, false, &refusal));  // another connection's own share
  first = FiberShares::Ticket();                     // given back
  EXPECT_EQ(a->fibers.load(), 1);
  EXPECT_TRUE(shares.TryTake(a, false, &refusal));
}

TEST(FiberSharesTest, StreamingSharesPerConnectionAndInAll) {
  FiberShares shares({/*per_connection=*/0, /*streaming=*/3, /*streaming_per_connection=*/2});
  auto a = std::make_shared<Connection>(), b = std::make_shared<Connection>();
  std::string refusal;
  std::vector<FiberShares::Ticket> held;
  held.push_back(shares.TryTake(a, true, &refusal));
  held.push_back(shares.TryTake(a, true, &refusal));
  EXPECT_FALSE(shares.TryTake(a, true, &refusal));
  EXPECT_EQ(refusal, "Reached server's max_streaming_calls_per_connection=2");
  EXPECT_TRUE(shares.TryTake(a, false, &refusal));  // unary calls are not in the streaming share
  held.push_back(shares.TryTake(b, true, &refusal));
  EXPECT_FALSE(shares.TryTake(b, true, &refusal));
  EXPECT_EQ(refusal, "Reached server's max_streaming_fibers=3");
  for (const auto& ticket : held) EXPECT_TRUE(ticket);
  EXPECT_EQ(shares.streaming(), 3);
  EXPECT_EQ(a->streaming.load(), 2);
  EXPECT_EQ(b->streaming.load(), 1);
  EXPECT_EQ(b->fibers.load(), 1);  // the refused ones gave back what they took
  FiberShares::Ticket moved = std::move(held.front());
  held.clear();
  EXPECT_EQ(shares.streaming(), 1);  // a moved-from ticket gives nothing back
  moved = FiberShares::Ticket();
  EXPECT_EQ(shares.streaming(), 0);
  EXPECT_EQ(a->streaming.load() + a->fibers.load() + b->streaming.load() + b->fibers.load(), 0);
}

}  // namespace
}  // namespace arenarpc::server
