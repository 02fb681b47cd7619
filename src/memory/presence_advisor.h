#pragma once
// PresenceAdvisor: which fields of a response type keep the exact reuse strategy from keeping
// their subtree between calls — proto3 singular sub-message fields declared without `optional`,
// anywhere in the type's tree (protobuf's generated Clear() deletes such a sub-message instead of
// clearing it, and an exact reuse cannot keep it attached without changing has_x()). Declaring the
// field `optional` leaves the wire bytes unchanged. Observe() samples real responses to tell how
// much of a response each such field holds.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "arenarpc/memory/message_memory.h"

namespace google::protobuf {
class Descriptor;
class FieldDescriptor;
class Message;
}  // namespace google::protobuf

namespace arenarpc::memory {

class PresenceAdvisor {
 public:
  explicit PresenceAdvisor(const google::protobuf::Descriptor& response);
  // No field of the type needs `optional`: Observe() and Report() have nothing to do.
  bool empty() const noexcept { return fields_.empty(); }
  // A response about to be released. Walks it on the first calls, then on one call in 4096.
  void Observe(const google::protobuf::Message& response) noexcept;
  // The fields, largest share first.
  std::vector<PresenceAdvice> Report() const;

 private:
  struct TypeFields {
    std::vector<const google::protobuf::FieldDescriptor*> message_fields;  // not maps
  };
  void Visit(const google::protobuf::Message& message, int depth,
             std::vector<uint64_t>& held) const;

  std::vector<const google::protobuf::FieldDescriptor*> fields_;  // the advised fields
  std::unordered_map<const google::protobuf::Descriptor*, TypeFields> types_;
  std::unordered_map<const google::protobuf::FieldDescriptor*, size_t> index_;
  std::atomic<uint64_t> first_calls_{0};
  mutable std::mutex mu_;
  std::vector<uint64_t> held_;  // per advised field, summed over observed responses
  uint64_t total_ = 0;          // SpaceUsedLong of the observed responses
};

}  // namespace arenarpc::memory
