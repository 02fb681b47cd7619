#pragma once
// Clearing a heap message while keeping its allocated sub-message tree (the reuse strategy's core).
//
// protobuf 3.21's generated Clear() on a heap message deletes singular sub-message fields, so a
// naive Clear()+Parse reuse rebuilds the whole tree every call. KeptTreePlan, computed once per
// root type from the descriptor, clears in place instead:
//  - repeated fields: RepeatedPtrField::Clear() keeps the cleared elements (and their strings'
//    capacity) for the next Add(); repeated scalars keep their capacity;
//  - singular sub-messages without a has-bit (proto3, no `optional`) reachable from the root
//    through such fields ("slots", up to kMaxDepth deep and kMaxSlots in all) are cleared
//    recursively and kept; a sub-message with a has-bit is cleared with ClearField, which keeps
//    its object and clears its has-bit (its presence stays exact, Settle never detaches it);
//  - everything else (scalars, singular strings, maps, oneofs, singular sub-messages inside
//  repeated
//    elements or beyond the slot limits, unknown fields, extensions) is cleared as Clear() would.
// Settle() detaches kept sub-messages that the new content left empty into a per-object stash, so
// has_x() and serialization match a heap message; the next Clear() re-attaches them.

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace google::protobuf {
class Descriptor;
class FieldDescriptor;
class Message;
}  // namespace google::protobuf

namespace arenarpc::memory {

class KeptTreePlan {
 public:
  static constexpr int kMaxDepth = 8;
  static constexpr int kMaxSlots = 64;
  using Stash = std::span<std::unique_ptr<google::protobuf::Message>>;

  explicit KeptTreePlan(const google::protobuf::Descriptor& root);
  ~KeptTreePlan();
  KeptTreePlan(const KeptTreePlan&) = delete;
  KeptTreePlan& operator=(const KeptTreePlan&) = delete;

  // Number of stash entries an object of the root type needs.
  size_t slot_count() const noexcept { return slot_count_; }
  // Whether Clear() keeps every object of the root type's tree (no maps, oneof or extension
  // sub-messages, no has-bit-less sub-message beyond the slots or inside repeated elements): then
  // an object on an arena does not grow call after call with objects Clear() let go of.
  bool keeps_objects() const noexcept { return keeps_objects_; }
  // Clears `message` (of the root type) in place, keeping its sub-message tree; re-attaches stashed
  // sub-messages whose field is unset. `kept` receives every sub-message left attached. Strings
  // without presence are erased in place (their buffers kept). Returns the bytes a message on an
  // arena let go of to its arena (strings with a has-bit: held until the arena dies).
  size_t Clear(google::protobuf::Message& message, Stash stash,
               std::vector<const google::protobuf::Message*>& kept) const;
  // Detaches into `stash` the kept sub-messages of `candidates` that are attached (and, when
  // `only_empty`, empty). Candidates are the sub-messages Clear() kept, or — for a request whose
  // bytes were shaped — those the bytes did not contain (ShapePlan::Shape). A sub-message the
  // content created (a new object) is never detached, so it keeps its presence even when empty.
  void Settle(google::protobuf::Message& message, Stash stash,
              std::span<const google::protobuf::Message* const> candidates, bool only_empty) const;
  // The same without lists: Clear() not reporting, Settle() detaching every attached kept
  // sub-message that is empty (whether kept or created by the content).
  size_t Clear(google::protobuf::Message& message, Stash stash) const;
  void Settle(google::protobuf::Message& message, Stash stash) const;

  struct TypePlan;  // per-descriptor field classification (kept_tree.cc)
  struct Node {     // one singular-message path from the root
    const google::protobuf::FieldDescriptor* field = nullptr;  // nullptr for the root
    int slot = -1;
    const TypePlan* type = nullptr;
    std::vector<Node> children;
  };

 private:
  Node root_;
  size_t slot_count_ = 0;
  bool keeps_objects_ = false;
};

}  // namespace arenarpc::memory
