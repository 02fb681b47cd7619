#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "memory/reuse/kept_tree.h"
#include "memory_test.pb.h"

namespace arenarpc::memory {
namespace {

using memtest::Leaf;
using memtest::Mid;
using memtest::Root;

class KeptTreeTest : public ::testing::Test {
 protected:
  KeptTreePlan plan_{*Root::descriptor()};
  std::vector<std::unique_ptr<google::protobuf::Message>> stash_{plan_.slot_count()};
};

void FillEverything(Root& root) {
  root.mutable_mid()->mutable_leaf()->add_value("a fairly long value that is not inline");
  root.mutable_mid()->mutable_leaf()->set_n(7);
  root.mutable_mid()->set_maybe(0);
  root.mutable_mid()->add_leaves()->add_value("x");
  root.mutable_leaf()->set_s("leaf string");
  root.add_mids()->mutable_leaf()->set_n(3);
  root.mutable_one_leaf()->set_n(1);
  (*root.mutable_counts())["k"] = 1;
  root.set_blob("blob");
}

TEST_F(KeptTreeTest, SlotsCoverSingularChains) {
  // Root.mid, Root.mid.leaf, Root.leaf (oneof members and repeated elements are not slots).
  EXPECT_EQ(plan_.slot_count(), 3u);
}

TEST_F(KeptTreeTest, ClearKeepsSubMessagesAndCapacity) {
  Root root;
  FillEverything(root);
  const Mid* mid = &root.mid();
  const Leaf* mid_leaf = &root.mid().leaf();
  const std::string* value = &root.mid().leaf().value(0);
  const size_t value_capacity = value->capacity();
  plan_.Clear(root, stash_);

  EXPECT_EQ(&root.mid(), mid);
  EXPECT_EQ(&root.mid().leaf(), mid_leaf);
  EXPECT_EQ(root.mid().leaf().value_size(), 0);
  EXPECT_EQ(root.mid().leaf().n(), 0);
  EXPECT_FALSE(root.mid().has_maybe());
  EXPECT_EQ(root.mids_size(), 0);
  EXPECT_EQ(root.choice_case(), Root::CHOICE_NOT_SET);
  EXPECT_TRUE(root.counts().empty());
  EXPECT_TRUE(root.blob().empty());
  // Cleared repeated elements stay for Add(), with their string capacity.
  std::string* reused = root.mutable_mid()->mutable_leaf()->add_value();
  EXPECT_EQ(reused, value);
  EXPECT_GE(reused->capacity(), value_capacity);
}

TEST_F(KeptTreeTest, SettleDetachesEmptyKeptMessagesAndClearReattaches) {
  Root root;
  FillEverything(root);
  const Mid* mid = &root.mid();
  plan_.Clear(root, stash_);
  EXPECT_TRUE(root.has_mid());  // kept, not yet settled
  root.mutable_leaf()->set_n(5);  // new content uses only Root.leaf
  plan_.Settle(root, stash_);
  EXPECT_FALSE(root.has_mid());
  EXPECT_TRUE(root.has_leaf());
  Root heap;
  heap.mutable_leaf()->set_n(5);
  EXPECT_EQ(root.SerializeAsString(), heap.SerializeAsString());

  plan_.Clear(root, stash_);
  EXPECT_TRUE(root.has_mid());
  EXPECT_EQ(&root.mid(), mid) << "the stashed object is re-attached";
  plan_.Settle(root, stash_);
  EXPECT_EQ(root.ByteSizeLong(), 0u);
}

TEST_F(KeptTreeTest, FreshObjectReplacesStashedOne) {
  Root root;
  root.mutable_mid()->set_maybe(1);
  plan_.Clear(root, stash_);
  plan_.Settle(root, stash_);
  ASSERT_FALSE(root.has_mid());
  root.set_allocated_mid(new Mid);  // content sets its own object while one is stashed
  root.mutable_mid()->set_maybe(2);
  plan_.Clear(root, stash_);
  EXPECT_TRUE(root.has_mid());
  EXPECT_FALSE(root.mid().has_maybe());
  for (const auto& kept : stash_) EXPECT_EQ(kept, nullptr);
}

TEST_F(KeptTreeTest, UnknownFieldsAreCleared) {
  Root root;
  Root other;
  other.set_blob("x");
  std::string bytes = other.SerializeAsString();
  bytes += std::string("\xa0\x06\x01", 3);  // field 100, varint 1: unknown to Root
  ASSERT_TRUE(root.MergeFromString(bytes));
  ASSERT_FALSE(root.GetReflection()->GetUnknownFields(root).empty());
  plan_.Clear(root, stash_);
  plan_.Settle(root, stash_);
  EXPECT_EQ(root.ByteSizeLong(), 0u);
}

}  // namespace
}  // namespace arenarpc::memory
