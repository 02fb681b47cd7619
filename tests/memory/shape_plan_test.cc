#include "memory/reuse/shape_plan.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "memory/reuse/cleared_tail.h"
#include "memory/reuse/kept_tree.h"
#include "arenarpc/memory/message_memory.h"
#include "memory/reuse/reuse_pool.h"
#include "echo/payload_generator.h"
#include "memory_test.pb.h"

namespace arenarpc::memory {
namespace {

using example::EchoRequest;
using google::protobuf::Message;
using google::protobuf::io::ArrayInputStream;
using google::protobuf::util::MessageDifferencer;
using memtest::Root;

std::vector<std::string> EchoRing(int scale, int count, uint64_t seed) {
  example::PayloadGenerator gen(scale, seed);
  std::vector<std::string> ring;
  for (int i = 0; i < count; ++i) {
    EchoRequest r;
    gen.Fill(&r);
    r.add_message("a top-level string, long enough to live on the heap");
    ring.push_back(r.SerializeAsString());
  }
  return ring;
}

// Memory of the largest request of the ring, parsed on its own.
size_t LargestSpaceUsed(const std::vector<std::string>& ring) {
  size_t largest = 0;
  for (const std::string& wire : ring) {
    EchoRequest r;
    r.ParseFromString(wire);
    largest = std::max(largest, r.SpaceUsedLong());
  }
  return largest;
}

// No content (a kept, empty payload sub-message may stay attached: KeptTreePlan's business).
bool NoContent(const Message& m) {
  const auto& r = static_cast<const EchoRequest&>(m);
  return r.message_size() == 0 && r.payload().result_size() == 0;
}

// One reused object, the runtime's order: shape, merge, use, clear (keeping the tree).
class ShapedObject {
 public:
  explicit ShapedObject(const Message& prototype)
      : message_(prototype.New()),
        shape_(*prototype.GetDescriptor()),
        keep_(*prototype.GetDescriptor()),
        stash_(keep_.slot_count()) {}

  // Returns whether shaping accepted the bytes; the message then holds the merge's result.
  // `settle` as the reuse strategy's ParseRequest does; off where a request's payload may be present but
  // empty (the one case Settle reads differently from heap, see docs/memory.md).
  bool Fill(const std::string& wire, int block_size = -1, bool* merged = nullptr,
            bool settle = false) {
    ArrayInputStream in(wire.data(), static_cast<int>(wire.size()), block_size);
    const bool shaped = shape_.Shape(*message_, in, spares_, scratch_);
    const bool ok = message_->MergeFromString(wire);
    if (settle) keep_.Settle(*message_, stash_);
    if (merged != nullptr) *merged = ok;
    return shaped;
  }
  void Clear() { keep_.Clear(*message_, stash_); }
  size_t Retained() const {
    size_t bytes = message_->SpaceUsedLong() + spares_.SpaceUsed();
    for (const auto& s : stash_) bytes += s ? s->SpaceUsedLong() : 0;
    return bytes;
  }
  Message& message() { return *message_; }
  SpareElements& spares() { return spares_; }

 private:
  std::unique_ptr<Message> message_;
  ShapePlan shape_;
  KeptTreePlan keep_;
  std::vector<std::unique_ptr<Message>> stash_;
  SpareElements spares_;
  std::vector<uint32_t> scratch_;
};

TEST(ShapePlan, ContentIsExactlyTheMergedBytesWhateverTheBlockSize) {
  const auto ring = EchoRing(4, 40, 7);
  for (int block : {-1, 1, 3, 64, 4096}) {
    ShapedObject object(EchoRequest::default_instance());
    for (int round = 0; round < 2; ++round) {
      for (const std::string& wire : ring) {
        bool merged = false;
        EXPECT_TRUE(object.Fill(wire, block, &merged)) << "block " << block;
        ASSERT_TRUE(merged);
        EchoRequest expected;
        ASSERT_TRUE(expected.ParseFromString(wire));
        ASSERT_TRUE(MessageDifferencer::Equals(object.message(), expected)) << "block " << block;
        ASSERT_EQ(object.message().SerializeAsString(), wire);
        object.Clear();
      }
    }
  }
}

TEST(ShapePlan, GenericMessagesWithOneofsMapsAndNestedSingulars) {
  std::vector<std::string> wires;
  for (int i = 0; i < 12; ++i) {
    Root r;
    for (int m = 0; m < i % 5; ++m) {
      auto* mid = r.add_mids();
      for (int l = 0; l < (i + m) % 4; ++l) mid->add_leaves()->add_value(std::string(l * 9, 'x'));
      if (m % 2 == 0) mid->mutable_leaf()->set_s("nested singular in a repeated element");
    }
    if (i % 2 == 0) r.mutable_mid()->add_leaves()->add_value("under a kept singular");
    if (i % 3 == 0) r.mutable_one_leaf()->add_value("oneof");
    (*r.mutable_counts())["k" + std::to_string(i)] = i;
    r.mutable_leaf()->add_value(std::string(i * 3, 'v'));
    wires.push_back(r.SerializeAsString());
  }
  ShapedObject object(Root::default_instance());
  for (int round = 0; round < 3; ++round) {
    for (const std::string& wire : wires) {
      EXPECT_TRUE(object.Fill(wire, -1, nullptr, /*settle=*/true));
      Root expected;
      ASSERT_TRUE(expected.ParseFromString(wire));
      ASSERT_TRUE(MessageDifferencer::Equals(object.message(), expected));
      object.Clear();
    }
  }
}

TEST(ShapePlan, CountsEveryStringFieldWhateverItsTagLength) {
  using memtest::Wide;
  std::vector<Wide> shapes(6);
  for (int i = 0; i < 6; ++i) {
    Wide& w = shapes[i];
    for (int k = 0; k < (i * 5) % 7; ++k) w.add_low(std::string(k, 'l'));
    for (int k = 0; k < (i * 3) % 5 + 1; ++k) w.add_high(std::string(k * 40, 'h'));  // 2-byte lengths too
    for (int k = 0; k < i % 3; ++k) w.add_far("far");
    if (i % 2 == 0) w.set_untracked("skipped by the scan");
    w.set_n(i * 1000);
  }
  ShapePlan plan(*Wide::descriptor());
  Wide object;
  SpareElements spares;
  std::vector<uint32_t> scratch;
  for (int round = 0; round < 3; ++round) {
    for (const Wide& shape : shapes) {
      const std::string wire = shape.SerializeAsString();
      for (int block : {-1, 1, 7}) {
        ArrayInputStream in(wire.data(), static_cast<int>(wire.size()), block);
        ASSERT_TRUE(plan.Shape(object, in, spares, scratch));
        if (round > 0) {  // the spares hold enough strings: each field gets exactly its count
          EXPECT_EQ(cleared_tail::ClearedCount(*object.mutable_low()), shape.low_size());
          EXPECT_EQ(cleared_tail::ClearedCount(*object.mutable_high()), shape.high_size());
          EXPECT_EQ(cleared_tail::ClearedCount(*object.mutable_far()), shape.far_size());
        }
        ASSERT_TRUE(object.MergeFromString(wire));
        ASSERT_EQ(object.SerializeAsString(), wire) << "block " << block;
        object.Clear();
      }
    }
  }
}

TEST(ShapePlan, RetainsAboutTheLargestRequestNotTheElementWiseMaximum) {
  const auto ring = EchoRing(8, 48, 11);
  const size_t largest = LargestSpaceUsed(ring);
  // Positional reuse (merge into the kept tree without shaping) for comparison.
  auto positional = std::unique_ptr<Message>(EchoRequest::default_instance().New());
  KeptTreePlan keep(*EchoRequest::descriptor());
  std::vector<std::unique_ptr<Message>> stash(keep.slot_count());
  ShapedObject shaped(EchoRequest::default_instance());
  for (int round = 0; round < 3; ++round) {
    for (const std::string& wire : ring) {
      ASSERT_TRUE(positional->MergeFromString(wire));
      keep.Clear(*positional, stash);
      EXPECT_TRUE(shaped.Fill(wire));
      shaped.Clear();
    }
  }
  const size_t positional_bytes = positional->SpaceUsedLong();
  const size_t shaped_bytes = shaped.Retained();
  EXPECT_GT(positional_bytes, 3 * largest) << "the workload must vary in shape";
  EXPECT_LT(shaped_bytes, 5 * largest / 2)
      << "positional: " << positional_bytes << ", largest request: " << largest;
}

TEST(ShapePlan, MalformedOrTruncatedBytesLeaveAnEmptyConsistentMessage) {
  const auto ring = EchoRing(3, 4, 5);
  ShapedObject object(EchoRequest::default_instance());
  ASSERT_TRUE(object.Fill(ring[0]));  // give the tree elements to move around
  object.Clear();
  const std::string& wire = ring[1];
  int rejected = 0;
  for (size_t cut = 1; cut < wire.size(); cut += std::max<size_t>(1, wire.size() / 300)) {
    const std::string prefix = wire.substr(0, cut);
    ArrayInputStream in(prefix.data(), static_cast<int>(prefix.size()), 5);
    std::vector<uint32_t> scratch;
    ShapePlan plan(*EchoRequest::descriptor());
    if (!plan.Shape(object.message(), in, object.spares(), scratch)) ++rejected;
    EXPECT_TRUE(NoContent(object.message())) << "shaping never adds content";
    object.Clear();
  }
  EXPECT_GT(rejected, 0);
  for (const std::string& bad :
       {std::string("\x0a\xff\xff\xff\xff\xff\xff", 7), std::string("\x00", 1),
        std::string("\x0f", 1), std::string("\x12\x05\x0a\x09", 4)}) {
    ArrayInputStream in(bad.data(), static_cast<int>(bad.size()));
    std::vector<uint32_t> scratch;
    ShapePlan plan(*EchoRequest::descriptor());
    EXPECT_FALSE(plan.Shape(object.message(), in, object.spares(), scratch));
    EXPECT_TRUE(NoContent(object.message()));
  }
  // Still usable afterwards.
  EXPECT_TRUE(object.Fill(ring[2]));
  EXPECT_EQ(object.message().SerializeAsString(), ring[2]);
}

TEST(ShapePlan, AMessageThatAlreadyHasContentKeepsIt) {
  // Shaping is for empty messages; called on one with content it must not wipe that content, and
  // the merge then appends as MergeFrom does.
  const auto ring = EchoRing(3, 3, 31);
  ShapedObject object(EchoRequest::default_instance());
  ASSERT_TRUE(object.Fill(ring[0]));
  object.Clear();
  ASSERT_TRUE(object.message().MergeFromString(ring[1]));  // content, not shaped
  EXPECT_TRUE(object.Fill(ring[2]));                       // shaped on top of it
  EchoRequest expected;
  ASSERT_TRUE(expected.ParseFromString(ring[1] + ring[2]));
  EXPECT_TRUE(MessageDifferencer::Equals(object.message(), expected));
}

TEST(ShapePlan, TrimExcessKeepsContentAndDropsAccumulatedElements) {
  const auto ring = EchoRing(6, 24, 3);
  auto message = std::unique_ptr<Message>(EchoRequest::default_instance().New());
  KeptTreePlan keep(*EchoRequest::descriptor());
  std::vector<std::unique_ptr<Message>> stash(keep.slot_count());
  for (const std::string& wire : ring) {
    ASSERT_TRUE(message->MergeFromString(wire));
    keep.Clear(*message, stash);
  }
  ASSERT_TRUE(message->MergeFromString(ring[0]));
  const size_t before = message->SpaceUsedLong();
  ShapePlan(*EchoRequest::descriptor()).TrimExcess(*message);
  EXPECT_EQ(message->SerializeAsString(), ring[0]);
  EchoRequest alone;
  alone.ParseFromString(ring[0]);
  EXPECT_LT(message->SpaceUsedLong(), before / 2);
  EXPECT_LE(message->SpaceUsedLong(), alone.SpaceUsedLong() * 3 / 2);
}

TEST(ReusePool, OverCapObjectIsTrimmedNotRebuiltWhenItsContentFits) {
  const auto ring = EchoRing(8, 48, 9);
  const size_t largest = LargestSpaceUsed(ring);
  ReuseSettings settings;
  settings.sample_every = 1;
  settings.max_object_bytes = 2 * largest;  // content fits; the element-wise maximum does not
  ReusePool pool(EchoRequest::default_instance(), settings);
  for (int round = 0; round < 4; ++round) {
    for (const std::string& wire : ring) {
      ReusePool::Entry* e = pool.Take();
      ASSERT_TRUE(e->message->MergeFromString(wire));  // unshaped: positional growth
      e->message->ByteSizeLong();
      pool.Give(e);
    }
  }
  const ReusePoolStats s = pool.stats();
  EXPECT_GT(s.trims, 0u);
  EXPECT_EQ(s.rebuilds, 0u);
  EXPECT_LE(s.retained_bytes_estimate, settings.max_object_bytes);
}

TEST(ReuseStrategy, ParseRequestRoundTripsInEveryStrategy) {
  const auto ring = EchoRing(4, 8, 21);
  for (const char* name : {"heap", "arena", "paged", "reuse"}) {
    auto memory = MakeMessageMemory(name, {}, nullptr);
    auto method = memory->Bind(EchoRequest::default_instance(), EchoRequest::default_instance());
    for (int round = 0; round < 2; ++round) {
      for (const std::string& wire : ring) {
        MessagePair pair = method->Acquire();
        SerializedSpan bytes(wire);
        ASSERT_EQ(pair.ParseRequest(bytes), ParseResult::kOk);
        ASSERT_EQ(pair.request()->SerializeAsString(), wire) << name;
      }
    }
    EXPECT_EQ(memory->stats().requests_shaped, std::string(name) == "reuse" ? 2 * ring.size() : 0u);
  }
}

}  // namespace
}  // namespace arenarpc::memory
