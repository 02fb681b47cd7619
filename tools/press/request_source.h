#pragma once
// RequestSource: where arenarpc_press's requests come from.
//   ring > 0: `ring` requests are drawn once, up front, and served round-robin (thread-safe,
//             read-only): the workload generator's CPU does not load the client while measuring.
//   ring = 0: every call gets a freshly drawn payload (the workload of docs/benchmarks.md), at
//             the cost of client CPU on the sending thread.
// Either way requests are RawEchoRequest (payload pre-serialized), wire-identical to EchoRequest.

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "echo/payload_generator.h"
#include "press/press_wire.pb.h"

namespace arenarpc::press {

// Draws one request with the workload's distributions.
void DrawRequest(example::PayloadGenerator& generator, RawEchoRequest* out);

class RequestSource {
 public:
  RequestSource(int payload_scale, int ring, uint64_t seed);

  // A request valid as long as the returned pointer lives. Thread-safe.
  std::shared_ptr<const RawEchoRequest> Next();

  bool pregenerated() const { return !ring_.empty(); }
  size_t ring_size() const { return ring_.size(); }
  // Mean serialized size of the ring's requests (0 when not pregenerated).
  double mean_request_bytes() const { return mean_bytes_; }

 private:
  std::vector<std::shared_ptr<const RawEchoRequest>> ring_;
  std::atomic<uint64_t> next_{0};
  double mean_bytes_ = 0;
  int scale_;
  uint64_t seed_;
};

}  // namespace arenarpc::press
