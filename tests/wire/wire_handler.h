#pragma once
// The handler logic shared by both runtimes' wire-identity tests, and the request sequence.
// Nothing in it is memory-specific: it only writes the reply the way application code does.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/descriptor.h>

#include "wire_messages.pb.h"

namespace arenarpc::wire {

enum Action : uint32_t {
  kCopyNode = 1u << 0,       // reply.node = request.node (if present)
  kSetThenClear = 1u << 1,   // reply.extra set with content, then cleared
  kCopyNodes = 1u << 2,      // reply.nodes = request.nodes
  kTouchOptional = 1u << 3,  // reply.opt_extra set explicitly, left empty (proto3 optional)
  kSwitchOneof = 1u << 4,    // reply.node.pick: one_text, then one_leaf
  kClearLeaf = 1u << 5,      // reply.node.leaf cleared after the copy
  kExtraChild = 1u << 6,     // reply.extra.child.leaf.n set (a deep sub-message chain)
  kTouchExtra = 1u << 7,     // reply.extra reached with mutable_extra() and left empty (proto3)
  kAssignEmpty = 1u << 8,    // reply.node = an empty Node
  kBranchOnPresence = 1u << 9,  // first of all: reply.extra.leaf.n set if reply.node is present
  kAllActions = (1u << 10) - 1,
};

void Answer(const WireRequest& request, WireReply* reply);

// `bytes` (a serialized `type`) with the entries of every map field sorted; every other byte keeps
// its place. Protobuf writes a map in its hash order, which is seeded per map object (address and
// time stamp counter), so two runs of the same code disagree on it. Same length as `bytes`; empty
// if `bytes` is not well-formed.
std::string SortMapEntries(std::string_view bytes, const google::protobuf::Descriptor& type);

// How many map fields in `bytes` (a serialized `type`) hold more than one entry.
int MultiEntryMaps(std::string_view bytes, const google::protobuf::Descriptor& type);

// `count` requests, big ones first, then mixed sizes and presence (some with a present but empty
// node), so a pooled object meets requests and replies smaller than what it kept. Maps hold up to
// four entries, oneofs switch cases and some nodes carry fields the schema does not know.
// Deterministic.
std::vector<WireRequest> RequestSequence(int count);

}  // namespace arenarpc::wire
