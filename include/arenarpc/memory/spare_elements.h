#pragma once
// SpareElements: cleared repeated-field elements (sub-messages and strings) owned by a reused
// object but attached to no field, so that ShapePlan can move them to whichever position the next
// request needs them at. Kept per pooled object; not thread-safe (one call at a time owns it).

#include <cstddef>
#include <string>
#include <vector>

namespace google::protobuf {
class Descriptor;
class Message;
}  // namespace google::protobuf

namespace arenarpc::memory {

// A small dense number per message type, the same for the whole process (so that every user of
// an object's spares agrees on it). Takes a lock: call it when building plans, not per call.
size_t SpareTypeId(const google::protobuf::Descriptor& type);

class SpareElements {
 public:
  SpareElements() = default;
  ~SpareElements() { Clear(); }
  SpareElements(const SpareElements&) = delete;
  SpareElements& operator=(const SpareElements&) = delete;

  // Messages are kept per element type; `type` is its SpareTypeId.
  google::protobuf::Message* TakeMessage(size_t type) noexcept;      // nullptr when none
  void PutMessage(size_t type, google::protobuf::Message* message);  // takes ownership
  std::string* TakeString() noexcept;                                // nullptr when none
  void PutString(std::string* s);                                    // takes ownership

  size_t message_count() const noexcept { return message_count_; }
  size_t string_count() const noexcept { return strings_.size(); }
  bool empty() const noexcept { return message_count_ == 0 && strings_.empty(); }
  // Heap bytes the spares hold (walks them: for sampling only).
  size_t SpaceUsed() const;
  // Destroys every spare.
  void Clear() noexcept;

 private:
  std::vector<std::vector<google::protobuf::Message*>> messages_;  // by type id
  std::vector<std::string*> strings_;
  size_t message_count_ = 0;
};

}  // namespace arenarpc::memory
