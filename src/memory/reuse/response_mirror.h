#pragma once
// ResponseMirror: fits a reused response's kept tree to the shape of its call's request, for the
// fields the two share (same field number, same message type or both repeated strings).
//
// Why: a request can be shaped from its wire bytes before it is parsed (ShapePlan), but a response
// is built by the handler, so nothing says its shape in advance; kept by position it grows to the
// element-wise maximum of every response it held (~8x an average response on the benchmark
// workload). Many services answer in the shape of the question (echo, proxies, transforms, batch
// calls that return one entry per entry asked), and for those the parsed request *is* the forecast:
// moving cleared elements so the response holds exactly the request's shape makes the handler's
// CopyFrom/add_*() allocate nothing and keeps the response at the size of the largest call.
// The reuse strategy checks the forecast on every call (response size against request size) and
// stops mirroring a method whose responses do not follow their requests.

#include <cstddef>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memory/reuse/spare_elements.h"

namespace google::protobuf {
class Descriptor;
class Message;
}  // namespace google::protobuf

namespace arenarpc::memory {

class ResponseMirror {
 public:
  // `through_singular`: also fit what hangs from singular sub-message fields the response has
  // attached (only kept ones are attached before the handler runs: keep_response_submessages).
  ResponseMirror(const google::protobuf::Descriptor& request,
                 const google::protobuf::Descriptor& response, bool through_singular);
  ~ResponseMirror();
  ResponseMirror(const ResponseMirror&) = delete;
  ResponseMirror& operator=(const ResponseMirror&) = delete;

  // False when the two types share no repeated field, even through shared sub-messages.
  bool useful() const noexcept { return useful_; }

  // `response` is empty (cleared, its kept tree attached); `request` is filled. Gives every shared
  // repeated field of the response as many cleared elements as the request's field has elements,
  // moving them from/to `spares` (new ones are made when the spares run out). Never throws.
  void Fit(google::protobuf::Message& response, const google::protobuf::Message& request,
           SpareElements& spares) const noexcept;

  // Moves the cleared elements of a response that Fit() fitted this call, just cleared and still in
  // cache, into `spares`, in the order the next Fit() takes them back (which then finds nothing
  // left to gather on a tree gone cold). Never throws.
  void GatherCleared(google::protobuf::Message& response, SpareElements& spares) const noexcept;

  struct Pair;  // per (response type, request type) plan (response_mirror.cc)

 private:
  const Pair* PairFor(const google::protobuf::Descriptor& response,
                      const google::protobuf::Descriptor& request);
  struct Hash {
    size_t operator()(const std::pair<const void*, const void*>& p) const noexcept {
      return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
    }
  };
  const bool through_singular_;
  std::unordered_map<std::pair<const void*, const void*>, std::unique_ptr<Pair>, Hash> pairs_;
  const Pair* root_ = nullptr;
  bool useful_ = false;
};

}  // namespace arenarpc::memory
