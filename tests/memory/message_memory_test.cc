#include <google/protobuf/arena.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "pooled_reuse_options.h"
#include "arenarpc/memory/message_memory.h"
#include "echo/payload_generator.h"

namespace arenarpc::memory {
namespace {

using example::EchoRequest;
using example::EchoResponse;
using google::protobuf::util::MessageDifferencer;

constexpr const char* kStrategies[] = {"heap", "arena", "paged", "reuse"};

// One echo call the way the runtime does it: merge the request's wire bytes, copy the payload into
// the response, serialize the response.
std::string EchoCall(MethodMemory& method, const std::string& request_wire, std::string* request_out) {
  MessagePair pair = method.Acquire();
  EXPECT_TRUE(pair);
  SerializedSpan bytes(request_wire);
  EXPECT_EQ(pair.ParseRequest(bytes), ParseResult::kOk);
  auto& request = static_cast<EchoRequest&>(*pair.request());
  auto& response = static_cast<EchoResponse&>(*pair.response());
  response.mutable_message()->CopyFrom(request.message());
  // Copies presence as an echo handler does (an unconditional mutable_payload(): the tests below).
  if (request.has_payload()) response.mutable_payload()->CopyFrom(request.payload());
  pair.PrepareResponse();
  if (request_out != nullptr) *request_out = request.SerializeAsString();
  return response.SerializeAsString();
}

MessagePair AcquireWithRequest(MethodMemory& method, const std::string& wire) {
  MessagePair pair = method.Acquire();
  SerializedSpan bytes(wire);
  EXPECT_EQ(pair.ParseRequest(bytes), ParseResult::kOk);
  return pair;
}

TEST(MessageMemory, EveryStrategySerializesIdenticallyAndParsesBackEqual) {
  std::vector<std::string> wires;
  for (int seed = 1; seed <= 4; ++seed) {
    EchoRequest source;
    source.add_message("hello");
    if (seed != 3) example::PayloadGenerator(5, seed).Fill(&source);  // seed 3: no payload at all
    wires.push_back(source.SerializeAsString());
  }
  std::vector<std::string> reference;
  for (const char* name : kStrategies) {
    SCOPED_TRACE(name);
    auto memory = MakeMessageMemory(name, {}, nullptr);
    EXPECT_EQ(memory->name(), name);
    auto method = memory->Bind(EchoRequest::default_instance(), EchoResponse::default_instance());
    std::vector<std::string> outputs;
    for (int repeat = 0; repeat < 2; ++repeat) {
      for (const std::string& wire : wires) {
        std::string request_bytes;
        outputs.push_back(EchoCall(*method, wire, &request_bytes));
        EXPECT_EQ(request_bytes, wire);
        EchoResponse parsed;
        ASSERT_TRUE(parsed.ParseFromString(outputs.back()));
        EchoRequest original;
        ASSERT_TRUE(original.ParseFromString(wire));
        EXPECT_TRUE(MessageDifferencer::Equals(parsed.payload(), original.payload()));
        EXPECT_EQ(parsed.has_payload(), original.has_payload());
      }
    }
    if (reference.empty()) {
      reference = outputs;
    } else {
      EXPECT_EQ(outputs, reference);
    }
    const MemoryStats s = memory->stats();
    EXPECT_EQ(s.acquired, 8u);
    EXPECT_EQ(s.released, 8u);
    EXPECT_EQ(s.pages_outstanding, 0u);
  }
}

// A proto3 sub-message (no `optional`) that the handler reaches and leaves empty: heap sends it
// (2 bytes). By default reuse keeps no such sub-message attached while the handler runs, so the
// reply is heap's; has_payload() is false before the handler writes, as on a fresh message.
TEST(ReuseStrategy, EmptySubMessagesTheHandlerTouchesAreSentAsHeapSendsThem) {
  auto memory = MakeMessageMemory("reuse", PooledReuseOptions(), nullptr);
  auto method = memory->Bind(EchoRequest::default_instance(), EchoResponse::default_instance());
  EchoRequest with_payload;
  example::PayloadGenerator(3, 9).Fill(&with_payload);
  EchoCall(*method, with_payload.SerializeAsString(), nullptr);  // a response tree to keep
  MessagePair pair = AcquireWithRequest(*method, with_payload.SerializeAsString());
  auto& response = static_cast<EchoResponse&>(*pair.response());
  EXPECT_FALSE(response.has_payload());
  response.mutable_payload();  // explicitly present, empty
  pair.PrepareResponse();
  EchoResponse heap;
  heap.mutable_payload();
  ASSERT_EQ(heap.SerializeAsString().size(), 2u);
  EXPECT_TRUE(response.has_payload());
  EXPECT_EQ(response.SerializeAsString(), heap.SerializeAsString());
}

// ReuseSettings::keep_response_submessages trades that exactness for keeping the tree: the kept
// payload is attached before the handler runs, and one the handler reaches and leaves empty cannot
// be told from an untouched one, so it is not sent (the documented difference; equivalent content).
TEST(ReuseStrategy, KeepingResponseSubMessagesLosesTheirPresenceWhenLeftEmpty) {
  MemoryOptions options = PooledReuseOptions();
  options.reuse.keep_response_submessages = true;
  auto memory = MakeMessageMemory("reuse", options, nullptr);
  auto method = memory->Bind(EchoRequest::default_instance(), EchoResponse::default_instance());
  EchoRequest with_payload;
  example::PayloadGenerator(3, 9).Fill(&with_payload);
  EchoCall(*method, with_payload.SerializeAsString(), nullptr);  // builds the kept tree
  MessagePair pair = AcquireWithRequest(*method, with_payload.SerializeAsString());
  auto& response = static_cast<EchoResponse&>(*pair.response());
  EXPECT_TRUE(response.has_payload());  // kept (and fitted to the request), not yet written
  response.mutable_payload();
  pair.PrepareResponse();
  EchoResponse heap;
  heap.mutable_payload();
  EXPECT_FALSE(response.has_payload());
  EXPECT_EQ(response.SerializeAsString(), "");
  EXPECT_TRUE(MessageDifferencer::Equivalent(response, heap));
}

TEST(MessageMemory, ArenaStrategiesPutMessagesOnTheArena) {
  for (const char* name : kStrategies) {
    SCOPED_TRACE(name);
    auto memory = MakeMessageMemory(name, {}, nullptr);
    auto method = memory->Bind(EchoRequest::default_instance(), EchoResponse::default_instance());
    MessagePair pair = method->Acquire();
    const bool arena_based = std::string(name) == "arena" || std::string(name) == "paged";
    EXPECT_EQ(pair.arena() != nullptr, arena_based);
    if (std::string(name) == "reuse") {
      // The pooled request on an arena of its own (request_arenas); EchoResponse's payload has no
      // `optional`, so the response is made on a paged arena per call.
      EXPECT_NE(pair.request()->GetArena(), nullptr);
      EXPECT_NE(pair.response()->GetArena(), nullptr);
      EXPECT_NE(pair.response()->GetArena(), pair.request()->GetArena());
    } else {
      EXPECT_EQ(pair.request()->GetArena(), pair.arena());
      EXPECT_EQ(pair.response()->GetArena(), pair.arena());
    }
    EXPECT_EQ(pair.request()->ByteSizeLong(), 0u);
    EXPECT_EQ(pair.request()->GetDescriptor(), EchoRequest::descriptor());
  }
}

// held_bytes(): what the strategy accounts without walking the messages. Arena strategies report
// their arena; reuse its pooled objects' estimates once they have been measured at a release
// (both responses on the pool and on an arena); heap keeps no account.
TEST(MessageMemory, HeldBytesIsTheStrategysOwnAccount) {
  EchoRequest source;
  example::PayloadGenerator(5, 1).Fill(&source);
  const std::string wire = source.SerializeAsString();
  for (const char* name : {"heap", "arena", "paged", "reuse", "reuse-arena-response", "auto"}) {
    SCOPED_TRACE(name);
    const bool arena_response = std::string(name) == "reuse-arena-response";
    MemoryOptions options = PooledReuseOptions();
    options.automatic.candidates = {"reuse"};
    auto memory = MakeMessageMemory(arena_response ? "reuse" : name, options, nullptr);
    // OptionalEchoResponse keeps its whole tree (pooled response); EchoResponse's payload has no
    // `optional`, so reuse makes it on an arena.
    auto method = arena_response ? memory->Bind(example::OptionalEchoRequest::default_instance(),
                                                EchoResponse::default_instance())
                                 : memory->Bind(example::OptionalEchoRequest::default_instance(),
                                                example::OptionalEchoResponse::default_instance());
    for (int call = 0; call < 3; ++call) {
      MessagePair pair = AcquireWithRequest(*method, wire);
      const std::optional<uint64_t> held = pair.held_bytes();
      const uint64_t walked = pair.request()->SpaceUsedLong() + pair.response()->SpaceUsedLong();
      if (std::string(name) == "heap") {
        EXPECT_FALSE(held);
      } else if (pair.arena() != nullptr) {
        ASSERT_TRUE(held);
        EXPECT_EQ(*held, pair.arena()->SpaceAllocated());
        EXPECT_GE(*held, wire.size());
      } else if (call == 0) {
        EXPECT_FALSE(held) << "a pooled object never released has no estimate yet";
      } else {
        ASSERT_TRUE(held);
        // The pooled request holds at least its content; the estimate counts kept capacity too.
        EXPECT_GE(*held, pair.request()->SpaceUsedLong());
        EXPECT_LE(*held, 4 * walked + 4 * wire.size());
      }
    }
  }
}

TEST(MessageMemory, FreshResponsesArePlainPooledOnesAreNot) {
  for (const char* name : kStrategies) {
    SCOPED_TRACE(name);
    auto memory = MakeMessageMemory(name, {}, nullptr);
    auto method = memory->Bind(EchoRequest::default_instance(), EchoResponse::default_instance());
    MessagePair pair = method->Acquire();
    EXPECT_EQ(pair.response_plain(), std::string(name) != "reuse");  // JSON printed directly
    MessagePair moved = std::move(pair);
    EXPECT_EQ(moved.response_plain(), std::string(name) != "reuse");
  }
}

TEST(MessageMemory, PagedReturnsEveryPageOnRelease) {
  auto memory = MakeMessageMemory(MemoryMode::kPaged);
  auto method = memory->Bind(EchoRequest::default_instance(), EchoResponse::default_instance());
  EchoRequest source;
  example::PayloadGenerator(8, 5).Fill(&source);
  const std::string wire = source.SerializeAsString();
  {
    MessagePair pair = method->Acquire();
    ASSERT_TRUE(pair.request()->MergeFromString(wire));
    EXPECT_GT(memory->stats().pages_outstanding, 1u);
    MessagePair moved = std::move(pair);
    EXPECT_FALSE(pair);  // NOLINT(bugprone-use-after-move): moved-from state is specified
    moved.Release();
    moved.Release();  // idempotent
    EXPECT_EQ(memory->stats().pages_outstanding, 0u);
  }
  for (int i = 0; i < 3; ++i) EchoCall(*method, wire, nullptr);
  const MemoryStats s = memory->stats();
  EXPECT_EQ(s.pages_outstanding, 0u);
  EXPECT_GT(s.page_cache_hits, 0u);
  EXPECT_EQ(s.page_allocations, s.page_cache_hits + s.page_cache_misses);
  EXPECT_LE(s.pages_cached, MemoryOptions{}.page_cache_capacity);
}

TEST(MessageMemory, UnknownStrategyNameIsAClearError) {
  std::string error;
  std::shared_ptr<MessageMemory> memory;
  EXPECT_NO_THROW(memory = MakeMessageMemory("arean", {}, &error));
  EXPECT_EQ(memory, nullptr);
  EXPECT_NE(error.find("arean"), std::string::npos) << error;
  EXPECT_NE(error.find("heap, arena, paged, reuse"), std::string::npos) << error;
  EXPECT_EQ(MakeMessageMemory(static_cast<MemoryMode>(42)), nullptr);  // not an enumerator
  error.clear();
  EXPECT_EQ(MakeMessageMemory("paged_arena", {}, &error)->name(), "paged");
  EXPECT_EQ(error, "");
}

// The throwing spellings, deprecated for one release, still throw what the error text says.
TEST(MessageMemory, DeprecatedThrowingSpellingsStillThrow) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  EXPECT_THROW(MakeMessageMemory("arean"), std::invalid_argument);
  MemoryOptions bad;
  bad.page_size = 5000;
  EXPECT_THROW(MakeMessageMemory(MemoryMode::kPaged, bad), std::invalid_argument);
  EXPECT_THROW(ValidateMemoryOptions(bad), std::invalid_argument);
  EXPECT_THROW(SetDefaultArenaSettings(ArenaSettings{1024, 512}), std::invalid_argument);
  EXPECT_EQ(MakeMessageMemory("heap")->name(), "heap");
#pragma GCC diagnostic pop
}

TEST(MemoryMode, TheEnumAndItsNamesBuildTheSameStrategies) {
  for (auto [mode, name] : {std::pair{MemoryMode::kHeap, "heap"}, {MemoryMode::kArena, "arena"},
                            {MemoryMode::kPaged, "paged"}, {MemoryMode::kReuse, "reuse"},
                            {MemoryMode::kAuto, "auto"}}) {
    EXPECT_EQ(MakeMessageMemory(mode)->name(), name);
    const NamedEnum<MemoryMode> named(name);
    ASSERT_TRUE(named.valid()) << name;
    EXPECT_EQ(named.value(), mode) << name;
    EXPECT_EQ(NamedEnum<MemoryMode>(mode).name(), name);
  }
  // brpc-era alias: accepted, shown by its canonical name; an unknown name is kept to be named.
  EXPECT_EQ(NamedEnum<MemoryMode>("paged_arena").name(), "paged");
  const NamedEnum<MemoryMode> unknown("pool");
  EXPECT_FALSE(unknown.valid());
  EXPECT_EQ(unknown.name(), "pool");
  EXPECT_FALSE(NamedEnum<MemoryMode>().valid());
  EXPECT_EQ("heap, arena, paged, reuse, auto", NamedEnum<MemoryMode>::Choices());  // no alias
}

TEST(MessageMemory, InvalidOptionsAreRejected) {
  auto expect_invalid = [](auto mutate, const char* needle) {
    MemoryOptions o;
    mutate(o);
    for (const char* name : kStrategies) {
      std::string error;
      std::shared_ptr<MessageMemory> memory;
      EXPECT_NO_THROW(memory = MakeMessageMemory(name, o, &error));
      EXPECT_EQ(memory, nullptr) << name << " accepted invalid options (" << needle << ")";
      EXPECT_NE(error.find(needle), std::string::npos) << error;
    }
    std::string error;
    EXPECT_EQ(-1, ValidateMemoryOptions(o, &error));
    EXPECT_NE(error.find(needle), std::string::npos) << error;
  };
  expect_invalid([](MemoryOptions& o) { o.page_size = 5000; }, "page_size");
  expect_invalid([](MemoryOptions& o) { o.page_cache_capacity = 0; }, "capacity_pages");
  expect_invalid([](MemoryOptions& o) { o.thread_cache_pages = o.page_cache_capacity + 1; },
                 "thread_cache_pages");
  expect_invalid([](MemoryOptions& o) { o.reuse.max_pooled_objects = 0; }, "max_pooled_objects");
  expect_invalid([](MemoryOptions& o) { o.reuse.max_object_bytes = 0; }, "max_object_bytes");
  expect_invalid([](MemoryOptions& o) { o.reuse.sample_every = 0; }, "sample_every");
  expect_invalid([](MemoryOptions& o) { o.arena.start_block_size = 0; }, "start_block_size");
  expect_invalid([](MemoryOptions& o) { o.arena.max_block_size = 16; }, "max_block_size");
}

TEST(ArenaSettings, ProcessDefaultsAreBrpcsAndOverridable) {
  const ArenaSettings original = DefaultArenaSettings();
  EXPECT_EQ(original.start_block_size, 256u);
  EXPECT_EQ(original.max_block_size, 8192u);
  std::string error;
  EXPECT_EQ(-1, SetDefaultArenaSettings({1024, 512}, &error));
  EXPECT_NE(error.find("max_block_size (512) must be >= start_block_size (1024)"),
            std::string::npos)
      << error;
  EXPECT_EQ(DefaultArenaSettings().max_block_size, 8192u);
  EXPECT_EQ(0, SetDefaultArenaSettings({1024, 65536}, &error));
  EXPECT_EQ(MemoryOptions{}.arena.start_block_size, 1024u);
  {
    // The arena strategy honours the settings: a tiny message fits its first 1 KiB block.
    auto memory = MakeMessageMemory(MemoryMode::kArena);
    auto method = memory->Bind(EchoRequest::default_instance(), EchoResponse::default_instance());
    MessagePair pair = method->Acquire();
    EXPECT_EQ(pair.arena()->SpaceAllocated(), 1024u);
  }
  EXPECT_EQ(0, SetDefaultArenaSettings(original, nullptr));
  EXPECT_EQ(DefaultArenaSettings().start_block_size, 256u);
}

}  // namespace
}  // namespace arenarpc::memory
