#pragma once
// ShapePlan: fits a reused message's kept tree to the request that is about to be merged into it.
//
// Why: a reused object keeps cleared repeated elements *by position* (RepeatedPtrField::Clear keeps
// them for the next Add()). When requests differ in shape, the tree grows to the element-wise
// maximum of every shape it has held: on the benchmark workload ~11x the memory of an average
// request (6.3 MB vs 0.56 MB at payload_scale 10), and a smaller tree misses: trimming to the last
// shape leaves ~70% of the next request's elements to be allocated again.
// Shape() instead scans the wire bytes first (tags and lengths only; string bodies are skipped) and
// moves cleared elements between positions so that every repeated field holds exactly as many
// cleared elements as the bytes will fill: excess ones go to a per-object SpareElements, missing
// ones come from it. The merge that follows then allocates nothing, and the object retains about
// the largest request it has seen instead of the element-wise maximum of all of them.
//
// Tracked: repeated message fields (not maps), repeated string/bytes fields, and singular message
// fields that are present (kept by KeptTreePlan). Everything else is skipped and left to the merge.
// Shaping never changes content: it only decides which cleared objects sit where.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "memory/reuse/spare_elements.h"

namespace google::protobuf {
class Descriptor;
class Message;
namespace io {
class ZeroCopyInputStream;
}  // namespace io
}  // namespace google::protobuf

namespace arenarpc::memory {

class ShapePlan {
 public:
  explicit ShapePlan(const google::protobuf::Descriptor& root);
  ~ShapePlan();
  ShapePlan(const ShapePlan&) = delete;
  ShapePlan& operator=(const ShapePlan&) = delete;

  // Fits `message` (of the root type; its repeated fields empty, e.g. cleared) to `wire`, the bytes
  // about to be merged into it. Best effort: on malformed bytes it stops and returns false, leaving
  // the message empty and consistent (the merge then reports the error). `scratch` is reused
  // working memory. When `absent` is given, it receives every attached (kept) singular
  // sub-message whose field the bytes do not contain, so that Settle detaches exactly those and
  // keeps present ones even when empty (complete only when Shape returns true). Never throws.
  bool Shape(google::protobuf::Message& message, google::protobuf::io::ZeroCopyInputStream& wire,
             SpareElements& spares, std::vector<uint32_t>& scratch,
             std::vector<const google::protobuf::Message*>* absent = nullptr) const noexcept;

  // Destroys, throughout the message's tree, the cleared repeated elements beyond its current
  // content (what positional reuse accumulated); the content itself is untouched.
  void TrimExcess(google::protobuf::Message& message) const noexcept;

  // Whether the plan's walks reach every object a message of the root type can own: every field
  // of its tree that can hold a separately allocated object (messages, strings) is tracked (plain
  // message fields and repeated std::string fields: no singular strings, maps, oneofs, groups or
  // extensions).
  bool covers_every_object() const noexcept { return covers_every_object_; }
  // Whether every sub-message and string of `message`'s content (its live elements, present
  // sub-messages) lies in [begin, end). Content deeper than the plan walks counts as outside.
  bool ContentWithin(const google::protobuf::Message& message, const char* begin,
                     const char* end) const noexcept;

  // For a message that only parsing has filled, before it is cleared: makes the strings of its
  // tracked fields cleared without erasing their bytes (clearing tens of thousands of strings is a
  // cache miss each on a cold tree). Such strings are stale: only a parse may get them back, as it
  // overwrites every string it adds; Gather() then moves them to spares that say so. Returns
  // whether it left them so (false: block moves unavailable, the strings were cleared).
  bool ForgetStrings(google::protobuf::Message& message) const noexcept;
  // Moves every cleared element of the message's tree into `spares` (what Shape() does first).
  // `cold`: see moves::Gather.
  void Gather(google::protobuf::Message& message, SpareElements& spares,
              bool cold = true) const noexcept;

  struct Type;  // per-descriptor plan (shape_plan.cc)

 private:
  const Type& TypeFor(const google::protobuf::Descriptor& d);
  std::unordered_map<const google::protobuf::Descriptor*, std::unique_ptr<Type>> types_;
  const Type* root_ = nullptr;
  bool covers_every_object_ = true;
};

}  // namespace arenarpc::memory
