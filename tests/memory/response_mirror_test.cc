#include "pooled_reuse_options.h"
#include "memory/reuse/response_mirror.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "arenarpc/memory/message_memory.h"
#include "memory/reuse/reuse_pool.h"
#include "echo/payload_generator.h"
#include "memory/reuse/cleared_tail.h"
#include "memory_test.pb.h"

namespace arenarpc::memory {
namespace {

// These tests are about pooled (mirrored) responses: not the paged arena exact reuse gives
// response types with subtrees it cannot keep.
MemoryOptions PooledResponses() {
  MemoryOptions options = PooledReuseOptions();
  options.reuse.arena_responses = false;
  return options;
}

using example::EchoRequest;
using example::EchoResponse;
using google::protobuf::io::ArrayInputStream;
using memtest::Root;

std::vector<std::string> Ring(int scale, int count, uint64_t seed) {
  example::PayloadGenerator gen(scale, seed);
  std::vector<std::string> ring;
  for (int i = 0; i < count; ++i) {
    EchoRequest r;
    gen.Fill(&r);
    ring.push_back(r.SerializeAsString());
  }
  return ring;
}

// A pair whose request is filled the runtime's way (ParseRequest: shape, merge, settle, mirror).
MessagePair AcquireWithRequest(MethodMemory& method, const std::string& wire) {
  MessagePair pair = method.Acquire();
  SerializedSpan bytes(wire);
  EXPECT_EQ(pair.ParseRequest(bytes), ParseResult::kOk);
  return pair;
}

// One echo call the runtime's way; returns the response's serialized payload (not the whole
// response: with keep_response_submessages an empty payload's presence is not heap's).
std::string EchoCall(MethodMemory& method, const std::string& wire) {
  MessagePair pair = AcquireWithRequest(method, wire);
  auto& request = static_cast<EchoRequest&>(*pair.request());
  auto& response = static_cast<EchoResponse&>(*pair.response());
  response.mutable_payload()->CopyFrom(request.payload());
  pair.PrepareResponse();
  response.ByteSizeLong();  // as serialization would: the forecast check reads the cached size
  return response.payload().SerializeAsString();
}

TEST(ResponseMirror, FindsSharedFieldsOnlyWhereTypesMatch) {
  EXPECT_TRUE(ResponseMirror(*EchoRequest::descriptor(), *EchoResponse::descriptor(), true).useful());
  EXPECT_TRUE(ResponseMirror(*Root::descriptor(), *Root::descriptor(), true).useful());
  // EchoRequest field 1 is repeated bytes, Root field 1 a singular message; field 2 differs too.
  EXPECT_FALSE(ResponseMirror(*EchoRequest::descriptor(), *Root::descriptor(), true).useful());
  // Without following singular sub-messages: Echo* still share their repeated `message`.
  EXPECT_TRUE(ResponseMirror(*EchoRequest::descriptor(), *EchoResponse::descriptor(), false).useful());
}

TEST(ResponseMirror, EchoResponsesStayAtTheSizeOfTheLargestCall) {
  const auto ring = Ring(6, 128, 17);
  size_t largest = 0;
  for (const std::string& wire : ring) {
    EchoRequest r;
    ASSERT_TRUE(r.ParseFromString(wire));
    largest = std::max(largest, r.SpaceUsedLong());
  }
  auto retained_after_ring = [&](bool mirror) {
    MemoryOptions options = PooledReuseOptions();
    options.reuse.mirror_responses = mirror;
    options.reuse.keep_response_submessages = true;  // the payload's tree is what is mirrored
    options.reuse.sample_every = 1;
    options.reuse.max_object_bytes = 1u << 30;  // no trimming: measure what the tree keeps
    // Requests on the heap: their estimate is then the kept tree alone, like the responses'.
    options.reuse.request_arenas = false;
    auto memory = MakeMessageMemory("reuse", options, nullptr);
    auto method = memory->Bind(EchoRequest::default_instance(), EchoResponse::default_instance());
    for (int round = 0; round < 3; ++round) {
      for (const std::string& wire : ring) {
        EchoRequest expected;
        expected.ParseFromString(wire);
        EXPECT_EQ(EchoCall(*method, wire), expected.payload().SerializeAsString());
      }
    }
    return memory->stats();
  };
  const MemoryStats mirrored = retained_after_ring(true);
  const MemoryStats positional = retained_after_ring(false);
  EXPECT_EQ(mirrored.responses_mirrored, 3 * ring.size());
  EXPECT_EQ(positional.responses_mirrored, 0u);
  // Request objects are shaped either way; the difference is the response's tree (measured: 0.67x,
  // moving a few KB with how the fields' pointer arrays happened to grow).
  EXPECT_LT(mirrored.retained_bytes_estimate, positional.retained_bytes_estimate * 7 / 10)
      << "mirrored " << mirrored.retained_bytes_estimate << " positional "
      << positional.retained_bytes_estimate;
  EXPECT_LT(mirrored.retained_bytes_estimate, 6 * largest) << "request + response, with spares";
}

// Addresses of a payload's items and strings in the order fitting deals them out: each result's
// items (each with its terms) before the result's own terms.
struct Layout {
  std::vector<const void*> items, strings;
};
Layout LayoutOf(const example::ComplexPayload& payload) {
  Layout layout;
  for (const auto& result : payload.result()) {
    for (const auto& item : result.item()) {
      layout.items.push_back(&item);
      for (const std::string& term : item.term()) layout.strings.push_back(&term);
    }
    for (const std::string& term : result.term()) layout.strings.push_back(&term);
  }
  return layout;
}

// Positions below both sizes whose object differs between two calls.
size_t Moved(const std::vector<const void*>& before, const std::vector<const void*>& after) {
  size_t moved = 0;
  for (size_t k = 0; k < std::min(before.size(), after.size()); ++k) moved += before[k] != after[k];
  return moved;
}

TEST(ReuseStrategy, ElementsKeepTheirPlaceInTraversalOrderAcrossShapes) {
  // Shaping and mirroring move elements between fields; they must deal them out in a stable
  // order, so that a call walks its strings in the order they were allocated (not a reshuffle
  // per differently shaped request: scattered strings cost cache misses on every pass).
  const auto ring = Ring(10, 24, 5);  // terms of 0..19 bytes: inline and heap-block strings
  MemoryOptions options = PooledReuseOptions();
  options.reuse.max_pooled_objects = 1;  // the same request and response objects every call
  options.reuse.keep_response_submessages = true;  // ... and the same response payload tree
  options.reuse.max_object_bytes = 1u << 30;
  auto memory = MakeMessageMemory("reuse", options, nullptr);
  auto method = memory->Bind(EchoRequest::default_instance(), EchoResponse::default_instance());
  Layout last_request, last_response;
  size_t compared = 0, differently_shaped = 0;
  for (int round = 0; round < 3; ++round) {
    for (const std::string& wire : ring) {
      MessagePair pair = AcquireWithRequest(*method, wire);
      auto& request = static_cast<EchoRequest&>(*pair.request());
      auto& response = static_cast<EchoResponse&>(*pair.response());
      response.mutable_payload()->CopyFrom(request.payload());
      pair.PrepareResponse();
      Layout req = LayoutOf(request.payload()), resp = LayoutOf(response.payload());
      if (round > 0) {  // the first round grows the objects to the ring's largest request
        EXPECT_EQ(Moved(last_request.strings, req.strings), 0u) << "request strings reordered";
        EXPECT_EQ(Moved(last_request.items, req.items), 0u) << "request items reordered";
        EXPECT_EQ(Moved(last_response.strings, resp.strings), 0u) << "response strings reordered";
        EXPECT_EQ(Moved(last_response.items, resp.items), 0u) << "response items reordered";
        ++compared;
        differently_shaped += last_request.items.size() != req.items.size();
      }
      last_request = std::move(req);
      last_response = std::move(resp);
    }
  }
  EXPECT_EQ(compared, 2 * ring.size());
  EXPECT_GT(differently_shaped, ring.size()) << "the ring should vary in shape";
  EXPECT_EQ(memory->stats().requests_shaped, 3 * ring.size());
  EXPECT_EQ(memory->stats().responses_mirrored, 3 * ring.size());
}

// Shaping and mirroring move cleared elements as blocks where protobuf's layout allows it, one by
// one elsewhere: both give every call its exact content, and the same kept trees.
TEST(ReuseStrategy, BlockAndPerElementMovesServeTheSameCalls) {
  const auto ring = Ring(10, 8, 23);
  auto serve_ring = [&](bool blocks) {
    cleared_tail::UseBlocksForTesting(blocks);
    auto memory = MakeMessageMemory("reuse", PooledResponses(), nullptr);
    auto method = memory->Bind(EchoRequest::default_instance(), EchoResponse::default_instance());
    for (int round = 0; round < 3; ++round) {
      for (const std::string& wire : ring) {
        EchoRequest expected;
        expected.ParseFromString(wire);
        EXPECT_EQ(EchoCall(*method, wire), expected.payload().SerializeAsString())
            << (blocks ? "blocks" : "per element") << ", round " << round;
      }
    }
    return memory->stats();
  };
  const MemoryStats per_element = serve_ring(false);
  const MemoryStats blocks = serve_ring(true);
  cleared_tail::UseBlocksForTesting(true);
  EXPECT_EQ(per_element.reuses, blocks.reuses);
  EXPECT_EQ(per_element.rebuilds, blocks.rebuilds);
  EXPECT_EQ(per_element.responses_mirrored, 3 * ring.size());
  EXPECT_EQ(blocks.responses_mirrored, 3 * ring.size());
  // Same elements kept either way; only the fields' pointer arrays may have grown differently.
  const double ratio = static_cast<double>(blocks.retained_bytes_estimate) /
                       static_cast<double>(per_element.retained_bytes_estimate);
  EXPECT_GT(ratio, 0.95);
  EXPECT_LT(ratio, 1.05);
}

// A fitted response is gathered when it is released (still in cache), so the next fit deals from
// the spares at once; used without a fit, an object drops the spares nothing would deal again.
TEST(ResponseMirror, AFittedResponseIsGatheredAtReleaseAndUnusedSparesGo) {
  ReusePool pool(EchoResponse::default_instance(), ReuseSettings{});
  const ResponseMirror mirror(*EchoRequest::descriptor(), *EchoResponse::descriptor(), true);
  ASSERT_TRUE(mirror.useful());
  std::vector<EchoRequest> requests(3);
  for (size_t i = 0; i < requests.size(); ++i) {
    example::PayloadGenerator(5, 70 + i).Fill(&requests[i]);
  }
  auto results_cleared = [](const ReusePool::Entry& e) {
    return static_cast<const EchoResponse&>(*e.message).payload().result().ClearedCount();
  };
  ReusePool::Entry* entry = pool.Take();
  const ReusePool::Entry* first = entry;
  for (int call = 0; call < 2; ++call) {
    auto& response = static_cast<EchoResponse&>(*entry->message);
    mirror.Fit(response, requests[call], entry->spares);
    response.mutable_payload()->CopyFrom(requests[call].payload());
    EXPECT_EQ(response.payload().SerializeAsString(), requests[call].payload().SerializeAsString());
    pool.Give(entry, &mirror);
    EXPECT_EQ(results_cleared(*entry), 0) << "gathered at release";
    EXPECT_GT(entry->spares.message_count(), 0u);
    EXPECT_GT(entry->spares.string_count(), 0u);
    entry = pool.Take();
    ASSERT_EQ(entry, first);
  }
  // Filled by hand, no fit: the handler's elements are new, the spares are dropped at release and
  // the object goes back to keeping its cleared elements by position.
  auto& response = static_cast<EchoResponse&>(*entry->message);
  response.mutable_payload()->CopyFrom(requests[2].payload());
  pool.Give(entry);
  EXPECT_TRUE(entry->spares.empty());
  EXPECT_EQ(results_cleared(*entry), requests[2].payload().result_size());
  pool.Give(pool.Take());
}

TEST(ResponseMirror, StopsForResponsesThatDoNotFollowTheirRequests) {
  auto memory = MakeMessageMemory("reuse", PooledResponses(), nullptr);
  auto method = memory->Bind(Root::default_instance(), Root::default_instance());
  Root small;
  small.add_mids()->add_leaves()->add_value("one");
  const std::string wire = small.SerializeAsString();
  for (int call = 0; call < 64; ++call) {
    MessagePair pair = AcquireWithRequest(*method, wire);
    auto& response = static_cast<Root&>(*pair.response());
    for (int i = 0; i < 200; ++i) response.add_mids()->add_leaves()->add_value("many");
    pair.PrepareResponse();
    ASSERT_EQ(response.mids_size(), 200);
    ASSERT_GT(response.ByteSizeLong(), 4 * wire.size());
  }
  const uint64_t mirrored = memory->stats().responses_mirrored;
  EXPECT_GE(mirrored, 16u);
  EXPECT_LT(mirrored, 64u) << "mirroring should have stopped";
}

TEST(ResponseMirror, LeavesAResponseThatAlreadyHasContentAlone) {
  ResponseMirror mirror(*Root::descriptor(), *Root::descriptor(), true);
  Root request, response;
  for (int i = 0; i < 3; ++i) request.add_mids()->add_leaves()->add_value("q");
  response.add_mids()->add_leaves()->add_value("already written");
  const std::string before = response.SerializeAsString();
  SpareElements spares;
  mirror.Fit(response, request, spares);
  EXPECT_EQ(response.SerializeAsString(), before);
}

TEST(ResponseMirror, ContentIsAlwaysTheHandlersWhateverTheForecast) {
  auto memory = MakeMessageMemory("reuse", PooledResponses(), nullptr);
  auto method = memory->Bind(Root::default_instance(), Root::default_instance());
  for (int call = 0; call < 30; ++call) {
    Root request;
    for (int i = 0; i < call % 7; ++i) request.add_mids()->add_leaves()->add_value("q");
    request.mutable_leaf()->add_value("leaf");
    Root expected;
    for (int i = 0; i < (call * 5) % 11; ++i) {
      auto* mid = expected.add_mids();
      for (int j = 0; j < call % 4; ++j) mid->add_leaves()->add_value(std::string(j * 7, 'r'));
    }
    const std::string wire = request.SerializeAsString();
    MessagePair pair = AcquireWithRequest(*method, wire);
    auto& response = static_cast<Root&>(*pair.response());
    response.MergeFrom(expected);
    pair.PrepareResponse();
    EXPECT_EQ(response.SerializeAsString(), expected.SerializeAsString()) << "call " << call;
  }
}

}  // namespace
}  // namespace arenarpc::memory
