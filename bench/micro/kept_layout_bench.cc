// kept_layout_bench: how much the memory layout of a kept message tree costs. Each call of the
// optional echo workload (merge the request's bytes, copy its payload into the response, serialize
// the response) runs on messages kept between calls and cleared in place, as reuse keeps them, or
// on a fresh arena, as the arena strategy makes them:
//
//   heap, churned   kept objects on the heap, first filled while the heap was fragmented (a server's
//                   heap after start-up: each string and sub-message lands wherever malloc finds room)
//   heap, fresh     kept objects on the heap, first filled on a heap with nothing else in it
//   object arena    kept objects on an arena of their own (their strings and sub-messages packed in
//                   the order they were first made), cleared in place like the heap ones
//   object arena, short values' buffers freed after each call
//                   as "object arena", then every string whose value fits std::string's inline
//                   buffer gives its heap buffer back (a kept string otherwise keeps the capacity
//                   of the longest value it ever held, so most kept strings own a buffer)
//   fresh arena     a new arena per call on a reused first block (the arena/paged strategies)
//
// A second table counts, for the kept layouts, the strings that own a heap buffer against the
// values that need one.
// Rounds are interleaved; the table prints each layout's median over the rounds and its ratio to
// "fresh arena". docs/benchmarks.md, "Kept-tree layout", has a run and what it means for reuse.
#include <google/protobuf/arena.h>
#include <gflags/gflags.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "echo/payload_generator.h"
#include "echo/echo_payload.pb.h"

DEFINE_int32(payload_scale, 10, "Workload payload_scale");
DEFINE_int32(ring, 64, "Distinct requests cycled through");
DEFINE_int32(calls, 1000, "Calls per layout per round");
DEFINE_int32(rounds, 5, "Interleaved rounds");

namespace {

using arenarpc::example::OptionalEchoRequest;
using arenarpc::example::OptionalEchoResponse;
using google::protobuf::Arena;

volatile size_t g_sink;

void Call(OptionalEchoRequest& request, OptionalEchoResponse& response, const std::string& wire,
          std::string& out) {
  request.Clear();
  response.Clear();
  if (!request.MergeFromString(wire)) std::abort();
  if (request.has_payload()) response.mutable_payload()->CopyFrom(request.payload());
  out.clear();
  response.AppendToString(&out);
  g_sink = out.size();
}

// Allocations of assorted small sizes, half of them freed at random: the holes a server's heap has
// after start-up. Returns what is still allocated (freed by the caller after the fill).
std::vector<void*> FragmentHeap() {
  std::mt19937 rng(1);
  std::vector<void*> blocks;
  for (int i = 0; i < 200000; ++i) blocks.push_back(std::malloc(16 + rng() % 64));
  std::shuffle(blocks.begin(), blocks.end(), rng);
  for (size_t i = 0; i < blocks.size() / 2; ++i) {
    std::free(blocks[i]);
    blocks[i] = nullptr;
  }
  return blocks;
}

// Calls f on every string of a payload.
template <class Payload, class F>
void ForEachString(Payload& payload, F&& f) {
  for (auto& result : *payload.mutable_result()) {
    for (auto& item : *result.mutable_item()) {
      for (std::string& term : *item.mutable_term()) f(term);
    }
    for (std::string& term : *result.mutable_term()) f(term);
  }
}

const size_t kInlineCapacity = std::string().capacity();

// How many of a payload's strings own a heap buffer (a kept string keeps the capacity of the
// longest value it ever held) against how many of its values need one.
struct StringKinds {
  size_t strings = 0, buffered = 0, long_values = 0;
};
void CountKinds(arenarpc::example::ComplexPayload& payload, StringKinds& kinds) {
  ForEachString(payload, [&](const std::string& s) {
    ++kinds.strings;
    kinds.buffered += s.capacity() > kInlineCapacity;
    kinds.long_values += s.size() > kInlineCapacity;
  });
}

// Gives back the heap buffer of every string whose value fits the inline one.
void ShrinkShortStrings(arenarpc::example::ComplexPayload& payload) {
  ForEachString(payload, [](std::string& s) {
    if (s.size() <= kInlineCapacity && s.capacity() > kInlineCapacity) s.shrink_to_fit();
  });
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("How the layout of a kept message tree changes a call's cost");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  std::vector<std::string> ring;
  arenarpc::example::PayloadGenerator generator(FLAGS_payload_scale, 24301);
  for (int i = 0; i < FLAGS_ring; ++i) {
    arenarpc::example::EchoRequest request;  // the same bytes as OptionalEchoRequest
    generator.Fill(&request);
    ring.push_back(request.SerializeAsString());
  }
  std::string out;
  OptionalEchoRequest churned_request;
  OptionalEchoResponse churned_response;
  {
    std::vector<void*> holes = FragmentHeap();
    for (const std::string& wire : ring) Call(churned_request, churned_response, wire, out);
    for (void* block : holes) std::free(block);
  }
  OptionalEchoRequest fresh_request;
  OptionalEchoResponse fresh_response;
  for (const std::string& wire : ring) Call(fresh_request, fresh_response, wire, out);
  Arena object_arena;
  auto* arena_request = Arena::CreateMessage<OptionalEchoRequest>(&object_arena);
  auto* arena_response = Arena::CreateMessage<OptionalEchoResponse>(&object_arena);
  for (const std::string& wire : ring) Call(*arena_request, *arena_response, wire, out);
  Arena shrunk_arena;
  auto* shrunk_request = Arena::CreateMessage<OptionalEchoRequest>(&shrunk_arena);
  auto* shrunk_response = Arena::CreateMessage<OptionalEchoResponse>(&shrunk_arena);
  auto shrunk_call = [&](const std::string& wire) {
    Call(*shrunk_request, *shrunk_response, wire, out);
    ShrinkShortStrings(*shrunk_request->mutable_payload());
    ShrinkShortStrings(*shrunk_response->mutable_payload());
  };
  for (const std::string& wire : ring) shrunk_call(wire);
  std::vector<char> first_block(16u << 20);

  struct Layout {
    const char* name;
    std::function<void(const std::string&)> call;
    std::vector<double> us;
  };
  std::vector<Layout> layouts = {
      {"heap, churned", [&](const std::string& w) { Call(churned_request, churned_response, w, out); }, {}},
      {"heap, fresh", [&](const std::string& w) { Call(fresh_request, fresh_response, w, out); }, {}},
      {"object arena", [&](const std::string& w) { Call(*arena_request, *arena_response, w, out); }, {}},
      {"object arena, short values' buffers freed after each call", shrunk_call, {}},
      {"fresh arena", [&](const std::string& w) {
         google::protobuf::ArenaOptions options;
         options.initial_block = first_block.data();
         options.initial_block_size = first_block.size();
         Arena arena(options);
         Call(*Arena::CreateMessage<OptionalEchoRequest>(&arena),
              *Arena::CreateMessage<OptionalEchoResponse>(&arena), w, out);
       }, {}},
  };
  for (int round = 0; round < FLAGS_rounds; ++round) {
    for (Layout& layout : layouts) {
      for (int i = 0; i < FLAGS_ring; ++i) layout.call(ring[i]);  // warm
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < FLAGS_calls; ++i) layout.call(ring[i % ring.size()]);
      layout.us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count() /
          FLAGS_calls);
    }
  }
  const auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  const double base = median(layouts.back().us);
  std::printf("| layout | us/call (median of %d rounds) | ratio to fresh arena |\n|---|---|---|\n",
              FLAGS_rounds);
  for (const Layout& layout : layouts) {
    std::printf("| %s | %.1f | %.2f |\n", layout.name, median(layout.us),
                median(layout.us) / base);
  }
  // The kept layouts' strings over one more pass of the ring (request and response together).
  std::printf("\n| kept layout | strings per call | with a heap buffer | values that need one |\n"
              "|---|---|---|---|\n");
  struct Kept {
    const char* name;
    OptionalEchoRequest* request;
    OptionalEchoResponse* response;
    std::function<void(const std::string&)> call;  // the layout's call; counted after it
  };
  const Kept kept[] = {
      {"heap, churned", &churned_request, &churned_response, layouts[0].call},
      {"heap, fresh", &fresh_request, &fresh_response, layouts[1].call},
      {"object arena", arena_request, arena_response, layouts[2].call},
      {"object arena, short values' buffers freed after each call", shrunk_request,
       shrunk_response, layouts[3].call}};
  for (const Kept& k : kept) {
    StringKinds kinds;
    for (const std::string& wire : ring) {
      k.call(wire);
      CountKinds(*k.request->mutable_payload(), kinds);
      CountKinds(*k.response->mutable_payload(), kinds);
    }
    const char* name = k.name;
    const double calls = static_cast<double>(ring.size());
    std::printf("| %s | %.0f | %.0f (%.0f %%) | %.0f (%.0f %%) |\n", name, kinds.strings / calls,
                kinds.buffered / calls, 100.0 * kinds.buffered / std::max<size_t>(1, kinds.strings),
                kinds.long_values / calls,
                100.0 * kinds.long_values / std::max<size_t>(1, kinds.strings));
  }
}
