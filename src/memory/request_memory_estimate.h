#pragma once
// RequestMemoryEstimator: about how much memory parsing a request will hold, from a scan of its
// wire bytes (tags and lengths; no value is decoded) or of its JSON body (objects, arrays, strings),
// so that a server can refuse a request whose parsed form would be far larger than its bytes (an
// empty repeated sub-message is 2 wire bytes and a heap object of tens of bytes).
//
// Costs are heap costs (glibc chunk sizes, repeated fields' pointer arrays at their doubling
// growth, unknown fields' records): an arena holds a little less, the reuse strategy about the
// same. How a server uses it: docs/server.md, "Message memory".

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>

namespace google::protobuf {
class Descriptor;
namespace io {
class ZeroCopyInputStream;
}  // namespace io
}  // namespace google::protobuf

namespace arenarpc::memory {

class RequestMemoryEstimator {
 public:
  // Plans every message type reachable from `root` (generated or dynamic: object sizes come from
  // the types' prototypes).
  explicit RequestMemoryEstimator(const google::protobuf::Descriptor& root);
  ~RequestMemoryEstimator();
  RequestMemoryEstimator(const RequestMemoryEstimator&) = delete;
  RequestMemoryEstimator& operator=(const RequestMemoryEstimator&) = delete;

  // The most a parse of `wire_size` bytes of this type can hold, whatever they are. No scan.
  uint64_t UpperBound(uint64_t wire_size) const noexcept;
  // What a parse of these wire bytes holds. Counting stops once past `stop_above` (the result is
  // then > stop_above). Malformed bytes: what the bytes before the malformation hold (a parse
  // holds that much before it fails). Thread-safe.
  uint64_t Estimate(google::protobuf::io::ZeroCopyInputStream& wire,
                    uint64_t stop_above) const noexcept;
  // What converting a JSON body of this type holds: the message it fills (each object as the
  // largest reachable message type, each array element and string as a repeated element) and its
  // wire bytes. Not a validator: malformed JSON is estimated as far as it goes.
  uint64_t EstimateJson(std::string_view json) const noexcept;

  struct Type;  // per-descriptor plan (request_memory_estimate.cc)

 private:
  const Type& TypeFor(const google::protobuf::Descriptor& d);
  std::unordered_map<const google::protobuf::Descriptor*, std::unique_ptr<Type>> types_;
  const Type* root_ = nullptr;
  uint64_t root_bytes_ = 0;        // the request object itself
  uint64_t worst_per_byte_ = 0;    // UpperBound's slope
  uint64_t largest_object_ = 0;    // heap cost of the largest reachable message object
};

}  // namespace arenarpc::memory
