#include "pooled_reuse_options.h"
#include "memory/reuse/reuse_pool.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "arenarpc/memory/message_memory.h"
#include "echo/payload_generator.h"
#include "memory_test.pb.h"

namespace arenarpc::memory {
namespace {

using example::EchoRequest;
using example::EchoResponse;
using example::OptionalEchoResponse;
using google::protobuf::Message;
using google::protobuf::util::MessageDifferencer;
using memtest::Root;

// Different contents on consecutive reuses, including dropping sub-messages that an earlier fill
// set, setting only deep ones, oneofs and explicitly present zero values.
std::vector<std::function<void(Root&)>> RootFills() {
  return {
      [](Root& r) {
        r.mutable_mid()->mutable_leaf()->add_value("first value, long enough for the heap");
        r.mutable_leaf()->set_n(1);
        r.add_mids()->mutable_leaf()->set_s("in a repeated element");
        r.mutable_one_leaf()->add_value("oneof");
      },
      [](Root& r) { r.set_blob("only a scalar: every kept sub-message must vanish"); },
      [](Root& r) { r.mutable_mid()->set_maybe(0); },  // present zero in a kept sub-message
      [](Root& r) {
        r.mutable_mid()->mutable_leaf()->set_n(2);
        r.set_one_text("text");
        (*r.mutable_counts())["a"] = 1;
      },
      [](Root&) {},  // empty
      [](Root& r) {
        r.add_mids();
        r.add_mids()->set_maybe(3);
        r.mutable_leaf()->add_value("");
      },
  };
}

TEST(ReuseStrategy, SerializationIsByteIdenticalToHeapAcrossReuses) {
  auto memory = MakeMessageMemory("reuse", PooledReuseOptions(), nullptr);
  auto method = memory->Bind(Root::default_instance(), Root::default_instance());
  std::set<const Message*> objects;
  for (int round = 0; round < 3; ++round) {
    for (const auto& fill : RootFills()) {
      Root heap_request, heap_response;
      fill(heap_request);
      fill(heap_response);
      const std::string wire = heap_request.SerializeAsString();

      MessagePair pair = method->Acquire();
      objects.insert(pair.request());
      objects.insert(pair.response());
      EXPECT_EQ(objects.size(), 2u) << "a single caller always gets the two pooled objects back";
      // The runtime's way: parse the wire bytes into the kept tree, hand to the handler.
      SerializedSpan bytes(wire);
      ASSERT_EQ(pair.ParseRequest(bytes), ParseResult::kOk);
      auto& response = static_cast<Root&>(*pair.response());
      fill(response);
      pair.PrepareResponse();

      EXPECT_EQ(pair.request()->SerializeAsString(), wire);
      EXPECT_EQ(response.SerializeAsString(), heap_response.SerializeAsString());
      EXPECT_TRUE(MessageDifferencer::Equals(*pair.request(), heap_request));
      EXPECT_TRUE(MessageDifferencer::Equals(response, heap_response));
      EXPECT_EQ(static_cast<Root&>(*pair.request()).has_mid(), heap_request.has_mid());
      EXPECT_EQ(response.has_leaf(), heap_response.has_leaf());
    }
  }
  EXPECT_GT(memory->stats().reuses, 0u);
}

TEST(ReuseStrategy, EchoCallKeepsTheWholeTree) {
  auto memory = MakeMessageMemory("reuse", PooledReuseOptions(), nullptr);
  auto method = memory->Bind(EchoRequest::default_instance(), EchoResponse::default_instance());
  EchoRequest source;
  example::PayloadGenerator(6, 3).Fill(&source);
  const std::string wire = source.SerializeAsString();
  const Message* payload = nullptr;
  const Message* first_result = nullptr;
  std::string first_response;
  for (int call = 0; call < 4; ++call) {
    MessagePair pair = method->Acquire();
    auto& request = static_cast<EchoRequest&>(*pair.request());
    auto& response = static_cast<EchoResponse&>(*pair.response());
    SerializedSpan bytes(wire);
    ASSERT_EQ(pair.ParseRequest(bytes), ParseResult::kOk);
    response.mutable_payload()->CopyFrom(request.payload());
    pair.PrepareResponse();
    const std::string out = response.SerializeAsString();
    if (call == 0) {
      payload = &request.payload();
      first_result = &request.payload().result(0);
      first_response = out;
    } else {
      EXPECT_EQ(&request.payload(), payload);
      EXPECT_EQ(&request.payload().result(0), first_result);
      EXPECT_EQ(out, first_response);
    }
  }
  const MemoryStats s = memory->stats();
  EXPECT_EQ(s.acquired, 4u);
  EXPECT_EQ(s.released, 4u);
  // The request on calls 2..4; the response (its payload has no `optional`) is on a paged arena.
  EXPECT_EQ(s.reuses, 3u);
  EXPECT_EQ(s.objects_pooled, 1u);
  EXPECT_GT(s.page_allocations, 0u);
  EXPECT_GT(s.retained_bytes_estimate, wire.size());
}

// Sizes vary 100x (payload scale 1..10 gives ~0.1 KB .. ~130 KB); the pool must stay under its
// byte cap and rebuild the objects that grew too large.
void RunVaryingWorkload(uint32_t sample_every, bool strict) {
  ReuseSettings settings;
  settings.max_pooled_objects = 8;
  settings.max_object_bytes = 2 << 20;
  settings.max_pool_bytes = 3 << 19;  // 1.5 MiB: room for about two large objects
  settings.sample_every = sample_every;
  ReusePool pool(EchoResponse::default_instance(), settings);
  example::PayloadGenerator small(2, 11), large(10, 12);
  std::vector<ReusePool::Entry*> held;
  size_t max_seen_size = 0, min_seen_size = SIZE_MAX;
  for (int round = 0; round < 60; ++round) {
    for (int i = 0; i < 6; ++i) {
      ReusePool::Entry* e = pool.Take();
      auto& msg = static_cast<EchoResponse&>(*e->message);
      ((round + i) % 3 == 0 ? large : small).Fill(msg.mutable_payload());
      const size_t size = msg.ByteSizeLong();  // the runtime serializes responses
      if (size > 0) {
        max_seen_size = std::max(max_seen_size, size);
        min_seen_size = std::min(min_seen_size, size);
      }
      pool.Settle(*e);
      held.push_back(e);
    }
    for (ReusePool::Entry* e : held) pool.Give(e);
    held.clear();
    const ReusePoolStats s = pool.stats();
    ASSERT_LE(s.retained_bytes_estimate, settings.max_pool_bytes);
    ASSERT_LE(s.objects_pooled, settings.max_pooled_objects);
    if (strict) {
      // With sample_every = 1 the estimate is exact: check it against a real walk.
      size_t truth = 0;
      std::vector<ReusePool::Entry*> all;
      for (uint64_t i = 0; i < s.objects_pooled; ++i) all.push_back(pool.Take());
      for (ReusePool::Entry* e : all) {
        truth += e->message->SpaceUsedLong();
        for (const auto& kept : e->stash) truth += kept ? kept->SpaceUsedLong() : 0;
      }
      ASSERT_LE(truth, settings.max_pool_bytes);
      for (ReusePool::Entry* e : all) pool.Give(e);
    }
  }
  EXPECT_GE(max_seen_size, 100 * min_seen_size) << "the workload must vary 100x";
  const ReusePoolStats s = pool.stats();
  EXPECT_GT(s.rebuilds, 0u);
  EXPECT_GT(s.reuses, 0u);
}

TEST(ReusePool, RespectsByteCapWithExactSampling) { RunVaryingWorkload(1, true); }
TEST(ReusePool, RespectsByteCapWithSparseSampling) { RunVaryingWorkload(8, false); }

// Between periodic walks, a release whose content is larger than any the object held before is
// measured exactly: the object may have grown, and the estimate must not lag behind it.
TEST(ReusePool, ContentLargerThanBeforeIsMeasuredExactly) {
  ReuseSettings settings;
  settings.max_pooled_objects = 1;
  settings.sample_every = 1000;  // no periodic walk in this test
  ReusePool pool(EchoResponse::default_instance(), settings);
  auto fill_and_give = [&](int scale, uint64_t seed) {
    ReusePool::Entry* e = pool.Take();
    auto& msg = static_cast<EchoResponse&>(*e->message);
    example::PayloadGenerator(scale, seed).Fill(msg.mutable_payload());
    msg.ByteSizeLong();  // as when serialized: the cached size is the content's wire size
    pool.Settle(*e);
    const size_t walked = msg.SpaceUsedLong() + e->spares.SpaceUsed();
    pool.Give(e);
    return walked;
  };
  fill_and_give(3, 1);  // first release: measured exactly
  // Smaller contents: estimated, no walk; the estimate only grows.
  const size_t after_first = pool.stats().retained_bytes_estimate;
  fill_and_give(2, 2);
  EXPECT_EQ(pool.stats().retained_bytes_estimate, after_first);
  // A larger content: walked, so the estimate is the object's real size with it.
  const size_t walked = fill_and_give(8, 3);
  EXPECT_GT(walked, 4 * after_first);
  EXPECT_EQ(pool.stats().retained_bytes_estimate, walked);
}

TEST(ReusePool, ObjectCapAndValidation) {
  ReuseSettings settings;
  settings.max_pooled_objects = 3;  // not a multiple of the shard count on most machines
  ReusePool pool(Root::default_instance(), settings);
  std::vector<ReusePool::Entry*> held;
  for (int i = 0; i < 5; ++i) held.push_back(pool.Take());
  for (auto* e : held) pool.Give(e);
  EXPECT_EQ(pool.stats().objects_pooled, 3u) << "one thread can fill every shard";
  EXPECT_EQ(pool.stats().creations, 5u);
  EXPECT_EQ(pool.stats().drops, 2u);
  held.clear();
  for (int i = 0; i < 3; ++i) held.push_back(pool.Take());
  EXPECT_EQ(pool.stats().reuses, 3u);
  EXPECT_EQ(pool.stats().objects_pooled, 0u);
  for (auto* e : held) pool.Give(e);

  ReuseSettings bad = settings;
  bad.max_pooled_objects = 0;
  EXPECT_THROW(ReusePool(Root::default_instance(), bad), std::invalid_argument);
  bad = settings;
  bad.sample_every = 0;
  EXPECT_THROW(ReusePool(Root::default_instance(), bad), std::invalid_argument);
  bad = settings;
  bad.max_pool_bytes = 0;
  EXPECT_THROW(ReusePool(Root::default_instance(), bad), std::invalid_argument);
}

// Objects on arenas of their own: granted only for types whose Clear() keeps every object.
TEST(ReusePool, ArenaObjectsOnlyWhereClearKeepsEveryObject) {
  EXPECT_TRUE(ReusePool(EchoRequest::default_instance(), ReuseSettings{}, true).on_arena());
  EXPECT_TRUE(ReusePool(memtest::Mid::default_instance(), ReuseSettings{}, true).on_arena());
  EXPECT_TRUE(ReusePool(memtest::Wide::default_instance(), ReuseSettings{}, true).on_arena());
  // A oneof of a message and a string, a map, and Mid's has-bit-less `leaf` inside `mids`.
  EXPECT_FALSE(ReusePool(Root::default_instance(), ReuseSettings{}, true).on_arena());
  EXPECT_FALSE(ReusePool(EchoRequest::default_instance(), ReuseSettings{}).on_arena());
  ReusePool heap(EchoRequest::default_instance(), ReuseSettings{});
  ReusePool::Entry* e = heap.Take();
  EXPECT_EQ(e->message->GetArena(), nullptr);
  heap.Give(e);
}

// Shaped, merged and settled on an arena call after call (sizes varying 1..6 KB to ~100 KB,
// kept sub-messages present, present and empty, or absent): every call reads and serializes as
// a fresh heap parse, one object serves them all, and its arena stops growing once it has held
// the largest content. ASan checks that nothing the arena owns is deleted.
TEST(ReusePool, ArenaObjectsParseExactlyAndStopGrowing) {
  ReuseSettings settings;
  settings.max_pooled_objects = 1;
  ReusePool pool(EchoRequest::default_instance(), settings, true);
  ASSERT_TRUE(pool.on_arena());
  std::vector<std::string> wires;
  for (int i = 0; i < 12; ++i) {
    EchoRequest r;
    if (i % 4 != 1) example::PayloadGenerator(1 + i % 8, 70 + static_cast<uint64_t>(i)).Fill(&r);
    if (i % 4 == 2) r.mutable_payload()->Clear();  // present and empty
    r.add_message("message " + std::to_string(i));
    wires.push_back(r.SerializeAsString());
  }
  const ReusePool::Entry* first = nullptr;
  uint64_t arena_after_first_round = 0;
  for (int round = 0; round < 3; ++round) {
    for (const std::string& wire : wires) {
      ReusePool::Entry* e = pool.Take();
      if (first == nullptr) first = e;
      ASSERT_EQ(e, first);
      ASSERT_NE(e->message->GetArena(), nullptr);
      google::protobuf::io::ArrayInputStream input(wire.data(), static_cast<int>(wire.size()));
      pool.Shape(*e, input);
      ASSERT_TRUE(e->message->MergeFromString(wire));
      pool.Settle(*e);
      EchoRequest fresh;
      ASSERT_TRUE(fresh.ParseFromString(wire));
      EXPECT_TRUE(MessageDifferencer::Equals(*e->message, fresh));
      EXPECT_EQ(static_cast<EchoRequest&>(*e->message).has_payload(), fresh.has_payload());
      EXPECT_EQ(e->message->SerializeAsString(), wire);
      pool.Give(e);
    }
    if (round == 0) arena_after_first_round = first->arena->SpaceAllocated();
  }
  EXPECT_EQ(first->arena->SpaceAllocated(), arena_after_first_round)
      << "the kept tree serves every later call without allocating";
  EXPECT_EQ(pool.stats().rebuilds, 0u);
}

// An arena object filled by anything but the strategy's parse (a runtime parsing with Clear(),
// which lets sub-messages go that the arena keeps) is not pooled; nor is one over the byte cap,
// which an arena cannot trim.
TEST(ReusePool, ArenaObjectsNotParsedOrOverTheCapAreDestroyed) {
  ReuseSettings settings;
  settings.max_object_bytes = 64u << 10;
  ReusePool pool(EchoRequest::default_instance(), settings, true);
  ASSERT_TRUE(pool.on_arena());
  EchoRequest large, small;
  example::PayloadGenerator(8, 5).Fill(&large);
  small.add_message("small");
  ReusePool::Entry* e = pool.Take();
  ASSERT_TRUE(e->message->ParseFromString(small.SerializeAsString()));  // Clear() + parse
  pool.Give(e);
  EXPECT_EQ(pool.stats().rebuilds, 1u);
  EXPECT_EQ(pool.stats().objects_pooled, 0u);

  const std::string wire = large.SerializeAsString();
  e = pool.Take();
  google::protobuf::io::ArrayInputStream input(wire.data(), static_cast<int>(wire.size()));
  pool.Shape(*e, input);
  ASSERT_TRUE(e->message->MergeFromString(wire));
  ASSERT_GT(e->arena->SpaceAllocated(), settings.max_object_bytes);
  pool.Give(e);
  EXPECT_EQ(pool.stats().rebuilds, 2u);
  EXPECT_EQ(pool.stats().trims, 0u);
  EXPECT_EQ(pool.stats().objects_pooled, 0u);
}

// Handler-filled objects (responses) get arenas only where the shape plan's walk reaches every
// object the type can own: a singular string (Leaf::s, Wide::untracked) could be handed one
// (set_allocated_s) that no walk would see.
TEST(ReusePool, HandlerFilledArenaObjectsOnlyWhereTheWalkReachesEveryObject) {
  constexpr auto kHandler = ReusePool::FilledBy::kHandler;
  EXPECT_TRUE(ReusePool(OptionalEchoResponse::default_instance(), ReuseSettings{}, true, kHandler)
                  .on_arena());
  // EchoResponse's `payload` has no has-bit: detached before each handler, which would then make
  // a new one every call on the arena. Kept attached (keep_response_submessages), it qualifies.
  EXPECT_FALSE(ReusePool(EchoResponse::default_instance(), ReuseSettings{}, true, kHandler).on_arena());
  ReuseSettings keep;
  keep.keep_response_submessages = true;
  EXPECT_TRUE(ReusePool(EchoResponse::default_instance(), keep, true, kHandler).on_arena());
  EXPECT_FALSE(ReusePool(memtest::Mid::default_instance(), ReuseSettings{}, true, kHandler).on_arena());
  EXPECT_FALSE(ReusePool(memtest::Wide::default_instance(), ReuseSettings{}, true, kHandler).on_arena());
  EXPECT_FALSE(ReusePool(Root::default_instance(), ReuseSettings{}, true, kHandler).on_arena());
  EXPECT_FALSE(
      ReusePool(OptionalEchoResponse::default_instance(), ReuseSettings{}, false, kHandler).on_arena());
}

// A handler may hand its response objects of its own (set_allocated_*, AddAllocated), which the
// arena then owns until it dies: such an object is destroyed at release, with what it was handed
// (LeakSanitizer checks that nothing is lost), instead of pooled. Copies protobuf makes of objects
// from another arena are the object's own. Content the handler built in place is pooled, in a
// block that stops growing, and accounted at what it uses, not at the block's size.
TEST(ReusePool, HandlerFilledArenaObjectsHoldingHandedObjectsAreDestroyed) {
  ReuseSettings settings;
  settings.max_pooled_objects = 1;
  ReusePool pool(OptionalEchoResponse::default_instance(), settings, true,
                 ReusePool::FilledBy::kHandler);
  ASSERT_TRUE(pool.on_arena());
  EchoRequest source;
  example::PayloadGenerator(4, 9).Fill(&source);
  ASSERT_GT(source.payload().result_size(), 0);
  // Handlers building in place, then each way of handing an object over.
  const std::vector<std::pair<const char*, std::function<void(OptionalEchoResponse&)>>> handlers = {
      {"copy", [&](OptionalEchoResponse& r) { r.mutable_payload()->CopyFrom(source.payload()); }},
      {"add", [&](OptionalEchoResponse& r) { r.add_message("built in place"); }},
      {"string handed", [&](OptionalEchoResponse& r) { r.mutable_message()->AddAllocated(new std::string("x")); }},
      {"copy again", [&](OptionalEchoResponse& r) { r.mutable_payload()->CopyFrom(source.payload()); }},
      {"payload handed", [&](OptionalEchoResponse& r) {
         auto* handed = new example::ComplexPayload(source.payload());
         r.set_allocated_payload(handed);
       }},
      {"item handed", [&](OptionalEchoResponse& r) {
         r.mutable_payload()->add_result()->mutable_item()->AddAllocated(new example::Item);
       }},
      {"item from another arena", [&](OptionalEchoResponse& r) {
         google::protobuf::Arena other;
         auto* item = google::protobuf::Arena::CreateMessage<example::Item>(&other);
         item->add_term("copied into the response's arena");
         r.mutable_payload()->add_result()->mutable_item()->AddAllocated(item);
       }},
  };
  const std::set<std::string> handed = {"string handed", "payload handed", "item handed"};
  uint64_t rebuilds = 0;
  for (int round = 0; round < 2; ++round) {
    for (const auto& [name, handler] : handlers) {
      ReusePool::Entry* e = pool.Take();
      ASSERT_NE(e->message->GetArena(), nullptr) << name;
      pool.DetachKept(*e);  // as the strategy does: the handler sees heap's presence
      auto& response = static_cast<OptionalEchoResponse&>(*e->message);
      handler(response);
      OptionalEchoResponse heap;
      handler(heap);
      EXPECT_EQ(response.SerializeAsString(), heap.SerializeAsString()) << name;
      const uint64_t reuses_before = pool.stats().reuses;
      pool.Give(e);
      if (handed.count(name) != 0) ++rebuilds;
      EXPECT_EQ(pool.stats().rebuilds, rebuilds) << name;
      EXPECT_EQ(pool.stats().objects_pooled, handed.count(name) != 0 ? 0u : 1u) << name;
      EXPECT_EQ(pool.stats().reuses, reuses_before);
    }
  }
  // Pooled at what its content uses, not at the size of its (lazily mapped) block.
  EXPECT_LT(pool.stats().retained_bytes_estimate, settings.max_object_bytes / 4);
}

// Objects given to a handler-filled object's arena outside its content (Arena::Own) live as long
// as the object: at most kMaxHandlerArenaUses calls.
TEST(ReusePool, HandlerFilledArenaObjectsServeABoundedNumberOfCalls) {
  ReuseSettings settings;
  settings.max_pooled_objects = 1;
  ReusePool pool(OptionalEchoResponse::default_instance(), settings, true,
                 ReusePool::FilledBy::kHandler);
  ASSERT_TRUE(pool.on_arena());
  const ReusePool::Entry* first = nullptr;
  int served_by_first = 0;
  for (int i = 0; i < 4200; ++i) {
    ReusePool::Entry* e = pool.Take();
    if (first == nullptr) first = e;
    served_by_first += e == first && pool.stats().rebuilds == 0;
    static_cast<OptionalEchoResponse&>(*e->message).add_message("m");
    e->arena->Own(new std::string("owned by the arena"));
    pool.Give(e);
  }
  EXPECT_EQ(pool.stats().rebuilds, 1u);
  EXPECT_EQ(served_by_first, 4097);
}

}  // namespace
}  // namespace arenarpc::memory
