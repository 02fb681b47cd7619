#include "memory/reuse/cleared_tail.h"

#include <google/protobuf/repeated_ptr_field.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "memory_test.pb.h"

namespace arenarpc::memory {
namespace {

using google::protobuf::RepeatedPtrField;

// Every test runs twice: with the block moves and with the per-element fallback.
class ClearedTail : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    blocks_ = cleared_tail::UseBlocksForTesting(GetParam());
    if (GetParam() && !blocks_) GTEST_SKIP() << "block moves unavailable with this protobuf";
  }
  void TearDown() override { cleared_tail::UseBlocksForTesting(true); }
  bool blocks_ = false;
};

// `live` live elements followed by `cleared` cleared ones; returns the cleared ones' addresses.
template <class T, class Fill>
std::vector<T*> Build(RepeatedPtrField<T>& field, int live, int cleared, Fill fill) {
  for (int i = 0; i < live + cleared; ++i) fill(*field.Add(), i);
  std::vector<T*> tail;
  for (int i = live; i < live + cleared; ++i) tail.push_back(field.Mutable(i));
  for (int i = 0; i < cleared; ++i) field.RemoveLast();
  return tail;
}

void FillString(std::string& s, int i) { s = "element " + std::to_string(i) + " of a test field"; }

TEST(ClearedTailLayout, BlockMovesAreInUseWithProtobuf321) {
#if GOOGLE_PROTOBUF_VERSION >= 3021000 && GOOGLE_PROTOBUF_VERSION < 3022000
  EXPECT_TRUE(cleared_tail::BlocksAvailable());
#else
  EXPECT_FALSE(cleared_tail::BlocksAvailable());
#endif
}

TEST_P(ClearedTail, TakeAllMovesTheClearedElementsInOrderAndLeavesTheLiveOnes) {
  RepeatedPtrField<std::string> field;
  const std::vector<std::string*> expected = Build(field, 3, 5, FillString);
  std::vector<std::string*> out(static_cast<size_t>(field.ClearedCount()));
  cleared_tail::TakeAll(field, std::span<std::string*>(out));
  EXPECT_EQ(out, expected);
  EXPECT_EQ(field.ClearedCount(), 0);
  ASSERT_EQ(field.size(), 3);
  EXPECT_EQ(field.Get(2), "element 2 of a test field");
  for (std::string* s : out) {
    EXPECT_TRUE(s->empty());        // cleared...
    EXPECT_GE(s->capacity(), 25u);  // ...with its buffer kept
    delete s;                       // the caller owns them now (ASan: exactly once)
  }
  field.Add()->assign("grows past the moved ones");  // a new element, not a dangling one
  EXPECT_EQ(field.size(), 4);
}

TEST_P(ClearedTail, ClearedCountReadsWhatTheLibraryReports) {
  RepeatedPtrField<std::string> never_used;
  EXPECT_EQ(cleared_tail::ClearedCount(never_used), 0);
  for (const auto& [live, cleared] : {std::pair{0, 0}, {2, 0}, {0, 4}, {3, 5}}) {
    RepeatedPtrField<std::string> field;
    Build(field, live, cleared, FillString);
    EXPECT_EQ(cleared_tail::ClearedCount(field), field.ClearedCount()) << live << "+" << cleared;
    EXPECT_EQ(cleared_tail::ClearedCount(field), cleared);
    field.Clear();  // the live ones join the cleared ones
    EXPECT_EQ(cleared_tail::ClearedCount(field), live + cleared);
  }
}

TEST_P(ClearedTail, ForgetLiveKeepsTheBytesOnlyWithBlockMoves) {
  RepeatedPtrField<std::string> field;
  Build(field, 3, 2, FillString);
  const std::string* first = &field.Get(0);
  cleared_tail::ForgetLive(field);
  EXPECT_EQ(field.size(), 0);
  EXPECT_EQ(field.ClearedCount(), 5);
  // Unerased with block moves (a parse overwrites them), cleared by the fallback.
  EXPECT_EQ(first->empty(), !blocks_);
  std::string* again = field.Add();  // the first cleared element is the first forgotten one
  EXPECT_EQ(again, first);
  again->assign("overwritten");
  EXPECT_EQ(field.Get(0), "overwritten");
}

TEST_P(ClearedTail, PrefetchArrayChangesNothing) {
  RepeatedPtrField<std::string> never_used;
  cleared_tail::PrefetchArray(never_used);  // no array yet
  EXPECT_EQ(never_used.size(), 0);
  RepeatedPtrField<std::string> field;
  const std::vector<std::string*> tail = Build(field, 2, 3, FillString);
  cleared_tail::PrefetchArray(field);
  EXPECT_EQ(field.size(), 2);
  EXPECT_EQ(cleared_tail::ClearedCount(field), 3);
  EXPECT_EQ(field.Get(1), "element 1 of a test field");
  EXPECT_EQ(field.Add(), tail[0]);
}

TEST_P(ClearedTail, TakeAllOfNothingIsANoOp) {
  RepeatedPtrField<std::string> never_used;
  cleared_tail::TakeAll(never_used, std::span<std::string*>());
  EXPECT_EQ(never_used.ClearedCount(), 0);
  RepeatedPtrField<std::string> only_live;
  Build(only_live, 2, 0, FillString);
  cleared_tail::TakeAll(only_live, std::span<std::string*>());
  EXPECT_EQ(only_live.size(), 2);
}

TEST_P(ClearedTail, AppendGrowsTheArrayAndAddReturnsTheElementsInOrder) {
  for (int live : {0, 1, 4}) {
    for (int cleared : {0, 2}) {
      SCOPED_TRACE(testing::Message() << live << " live, " << cleared << " cleared");
      RepeatedPtrField<std::string> field;
      std::vector<std::string*> order = Build(field, live, cleared, FillString);
      std::vector<std::string*> items;
      for (int i = 0; i < 40; ++i) items.push_back(new std::string());  // forces a reallocation
      cleared_tail::Append(field, std::span<std::string* const>(items));
      order.insert(order.end(), items.begin(), items.end());
      EXPECT_EQ(field.size(), live);
      ASSERT_EQ(field.ClearedCount(), cleared + 40);
      for (std::string* s : order) EXPECT_EQ(field.Add(), s);  // reused, first in first out
      EXPECT_EQ(field.ClearedCount(), 0);
    }  // the field deletes every element: ASan reports a leak or a double free
  }
}

TEST_P(ClearedTail, MessagesRoundTripThroughTheTail) {
  RepeatedPtrField<memtest::Leaf> field;
  auto fill = [](memtest::Leaf& leaf, int i) {
    leaf.set_n(i);
    leaf.add_value("kept value");
  };
  const std::vector<memtest::Leaf*> tail = Build(field, 2, 3, fill);
  std::vector<memtest::Leaf*> out(3);
  cleared_tail::TakeAll(field, std::span<memtest::Leaf*>(out));
  EXPECT_EQ(out, tail);
  for (memtest::Leaf* leaf : out) {
    EXPECT_EQ(leaf->n(), 0);
    EXPECT_EQ(leaf->value_size(), 0);
    EXPECT_EQ(leaf->value().ClearedCount(), 1);  // the sub-message tree came along
  }
  RepeatedPtrField<memtest::Leaf> other;
  cleared_tail::Append(other, std::span<memtest::Leaf* const>(out));
  EXPECT_EQ(other.ClearedCount(), 3);
  EXPECT_EQ(other.Add(), tail[0]);
  EXPECT_EQ(field.size(), 2);
  EXPECT_EQ(field.ClearedCount(), 0);
}

INSTANTIATE_TEST_SUITE_P(Moves, ClearedTail, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& p) {
                           return p.param ? "Blocks" : "PerElement";
                         });

}  // namespace
}  // namespace arenarpc::memory
