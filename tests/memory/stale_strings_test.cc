// A request that only a parse filled gives its strings back without erasing them (ShapePlan::
// ForgetStrings): the next parse overwrites each one, and nothing filled by hand ever meets one.
// Every case runs with block moves (where the strings stay stale) and with per-element moves
// (where they are cleared as before).
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pooled_reuse_options.h"
#include "arenarpc/memory/message_memory.h"
#include "memory/reuse/response_mirror.h"
#include "memory/reuse/reuse_pool.h"
#include "echo/payload_generator.h"
#include "memory/reuse/cleared_tail.h"

namespace arenarpc::memory {
namespace {

using example::ComplexPayload;
using example::EchoRequest;
using example::EchoResponse;
using google::protobuf::io::ArrayInputStream;
using google::protobuf::util::MessageDifferencer;

std::vector<EchoRequest> Requests(int count, uint64_t seed) {
  std::vector<EchoRequest> requests(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    example::PayloadGenerator(3 + i % 4, seed + static_cast<uint64_t>(i)).Fill(&requests[i]);
    requests[i].add_message("message " + std::to_string(i) + ", long enough for the heap");
  }
  return requests;
}

size_t NonEmptySpareStrings(const ReusePool::Entry& entry) {
  size_t n = 0;
  entry.spares.ForEachString([&](const std::string& s) { n += s.empty() ? 0 : 1; });
  return n;
}

// Builds `out` from `model` the way a handler that appends would: every string it adds must come
// back empty, whatever the object held before.
void AppendCopy(const ComplexPayload& model, ComplexPayload* out) {
  for (const auto& result : model.result()) {
    auto* r = out->add_result();
    for (const auto& item : result.item()) {
      auto* it = r->add_item();
      for (const std::string& term : item.term()) {
        std::string* t = it->add_term();
        ASSERT_TRUE(t->empty()) << "a stale string reached a hand-filled message";
        t->append(term);
      }
    }
    for (const std::string& term : result.term()) {
      std::string* t = r->add_term();
      ASSERT_TRUE(t->empty()) << "a stale string reached a hand-filled message";
      t->append(term);
    }
  }
}

// One call's request: shaped, merged and given back, as the strategy does.
bool ParseAndGive(ReusePool& pool, ReusePool::Entry* entry, const EchoRequest& request) {
  const std::string wire = request.SerializeAsString();
  ArrayInputStream shape_input(wire.data(), static_cast<int>(wire.size()));
  pool.Shape(*entry, shape_input);
  const bool merged = entry->message->MergeFromString(wire);
  pool.Give(entry);
  return merged;
}

class StaleStrings : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { blocks_ = cleared_tail::UseBlocksForTesting(GetParam()); }
  void TearDown() override { cleared_tail::UseBlocksForTesting(true); }
  bool blocks_ = false;
};

TEST_P(StaleStrings, EveryParseOverwritesWhatThePreviousLeft) {
  ReusePool pool(EchoRequest::default_instance(), ReuseSettings{});
  const std::vector<EchoRequest> requests = Requests(12, 40);
  ReusePool::Entry* entry = pool.Take();
  const ReusePool::Entry* first = entry;
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string wire = requests[i].SerializeAsString();
    ArrayInputStream shape_input(wire.data(), static_cast<int>(wire.size()));
    pool.Shape(*entry, shape_input);
    ASSERT_TRUE(entry->message->MergeFromString(wire));
    EXPECT_TRUE(MessageDifferencer::Equals(*entry->message, requests[i])) << "call " << i;
    EXPECT_EQ(entry->message->SerializeAsString(), wire) << "call " << i;
    pool.Give(entry);
    // Released: the strings sit in the spares, unerased only with block moves.
    EXPECT_GT(entry->spares.string_count(), 0u);
    EXPECT_EQ(entry->spares.strings_stale(), blocks_);
    if (blocks_) {
      EXPECT_GT(NonEmptySpareStrings(*entry), 0u);
    } else {
      EXPECT_EQ(NonEmptySpareStrings(*entry), 0u);
    }
    entry = pool.Take();
    ASSERT_EQ(entry, first) << "one caller gets its object back";
  }
  pool.Give(entry);
}

TEST_P(StaleStrings, AnObjectFilledByHandNeverMeetsOne) {
  ReusePool pool(EchoRequest::default_instance(), ReuseSettings{});
  const std::vector<EchoRequest> requests = Requests(2, 50);
  ReusePool::Entry* entry = pool.Take();
  ASSERT_TRUE(ParseAndGive(pool, entry, requests[0]));

  // Taken again without shaping (not for a parse): the tree has no cleared string left in it.
  entry = pool.Take();
  auto& message = static_cast<EchoRequest&>(*entry->message);
  std::string* m = message.add_message();
  EXPECT_TRUE(m->empty());
  m->append("by hand");
  AppendCopy(requests[1].payload(), message.mutable_payload());
  EchoRequest expected = requests[1];
  expected.clear_message();
  expected.add_message("by hand");
  EXPECT_TRUE(MessageDifferencer::Equals(message, expected));
  pool.Give(entry);
}

// A response fit deals spare strings to code that fills by hand: if the spares it is given are
// stale (a parsed object's), it scrubs them first.
TEST_P(StaleStrings, AResponseFitScrubsThemFirst) {
  ReusePool pool(EchoRequest::default_instance(), ReuseSettings{});
  const ResponseMirror mirror(*EchoResponse::descriptor(), *EchoRequest::descriptor(),
                              /*through_singular=*/true);
  const std::vector<EchoRequest> requests = Requests(2, 60);
  ReusePool::Entry* entry = pool.Take();
  ASSERT_TRUE(ParseAndGive(pool, entry, requests[0]));
  ASSERT_EQ(entry->spares.strings_stale(), blocks_);

  // The same object, now written by hand as a response, fitted to an incoming EchoResponse.
  ReusePool::Entry* response = pool.Take();
  ASSERT_EQ(response, entry);
  EchoResponse incoming;
  *incoming.mutable_payload() = requests[1].payload();
  mirror.Fit(*response->message, incoming, response->spares);
  EXPECT_FALSE(response->spares.strings_stale());
  auto& message = static_cast<EchoRequest&>(*response->message);
  AppendCopy(requests[1].payload(), message.mutable_payload());
  EXPECT_TRUE(MessageDifferencer::Equals(message.payload(), requests[1].payload()));
  pool.Give(response, &mirror);
}

// The strategy keeps a pool per type and role, so a type that is one method's request and another's
// response never gets a parsed object back as a response.
TEST_P(StaleStrings, ATypeInBothRolesHasAPoolForEach) {
  MemoryOptions options = PooledReuseOptions();
  options.reuse.arena_responses = false;  // pooled responses, as this test is about
  auto memory = MakeMessageMemory("reuse", options, nullptr);
  auto forward = memory->Bind(EchoRequest::default_instance(), EchoResponse::default_instance());
  auto backward = memory->Bind(EchoResponse::default_instance(), EchoRequest::default_instance());
  const std::vector<EchoRequest> requests = Requests(2, 60);

  const google::protobuf::Message* parsed_request = nullptr;
  {
    MessagePair pair = forward->Acquire();
    const std::string wire = requests[0].SerializeAsString();
    SerializedSpan bytes(wire);
    ASSERT_EQ(pair.ParseRequest(bytes), ParseResult::kOk);
    static_cast<EchoResponse&>(*pair.response())
        .mutable_payload()
        ->CopyFrom(static_cast<EchoRequest&>(*pair.request()).payload());
    pair.PrepareResponse();
    parsed_request = pair.request();
  }
  MessagePair pair = backward->Acquire();
  EXPECT_NE(pair.response(), parsed_request);
  EchoResponse incoming;
  *incoming.mutable_payload() = requests[1].payload();
  const std::string wire = incoming.SerializeAsString();
  SerializedSpan bytes(wire);
  ASSERT_EQ(pair.ParseRequest(bytes), ParseResult::kOk);  // also fits the response
  auto& response = static_cast<EchoRequest&>(*pair.response());
  AppendCopy(requests[1].payload(), response.mutable_payload());
  pair.PrepareResponse();
  EXPECT_TRUE(MessageDifferencer::Equals(response.payload(), requests[1].payload()));
  EXPECT_EQ(memory->stats().responses_mirrored, 2u);
}

INSTANTIATE_TEST_SUITE_P(Moves, StaleStrings, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Blocks" : "PerElement"; });

}  // namespace
}  // namespace arenarpc::memory
