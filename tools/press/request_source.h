#pragma once
// RequestSource: where arenarpc_press's requests come from.
// The echo workload (default):
//   ring > 0: `ring` requests are drawn once, up front, and served round-robin (thread-safe,
//             read-only): the workload generator's CPU does not load the client while measuring.
//   ring = 0: every call gets a freshly drawn payload (the workload of docs/benchmarks.md), at
//             the cost of client CPU on the sending thread.
//   With a payload mix (--payload_mix) the calls' scales follow MixOrder(); the ring is rounded up
//   to a whole number of its periods, and each scale draws from its own generator (seeded alike),
//   so a mix's scale-10 requests are the pure scale-10 ring's.
//   Echo requests are RawEchoRequest (payload pre-serialized), wire-identical to EchoRequest.
// A user's method (--method): the --input requests, converted once, cycled in order.

#include <google/protobuf/message.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "echo/payload_generator.h"
#include "press/payload_mix.h"
#include "press/press_request.h"

namespace arenarpc::press {

// Draws one echo request with the workload's distributions; with_json also fills out->json.
void DrawRequest(example::PayloadGenerator& generator, PressRequest* out, bool with_json = false);

// A request of a user's method from its message: serialized once (and printed as JSON when
// with_json).
std::shared_ptr<const PressRequest> MakeUserRequest(const google::protobuf::Message& message,
                                                    bool with_json);

class RequestSource {
 public:
  // The echo workload. with_json: also build each request's JSON (HTTP+JSON).
  RequestSource(int payload_scale, int ring, uint64_t seed, bool with_json = false);
  // The echo workload, scales mixed (ParsePayloadMix); ring 0 draws each call at its turn's scale.
  RequestSource(const std::vector<PayloadShare>& mix, int ring, uint64_t seed,
                bool with_json = false);
  // Fixed requests, cycled in order (must not be empty).
  explicit RequestSource(std::vector<std::shared_ptr<const PressRequest>> requests);

  // A request valid as long as the returned pointer lives. Thread-safe.
  std::shared_ptr<const PressRequest> Next();

  bool pregenerated() const { return !ring_.empty(); }
  size_t ring_size() const { return ring_.size(); }
  // Mean serialized size of the ring's requests (0 when not pregenerated).
  double mean_request_bytes() const { return mean_bytes_; }

 private:
  void MeasureRing();

  std::vector<std::shared_ptr<const PressRequest>> ring_;
  std::atomic<uint64_t> next_{0};
  double mean_bytes_ = 0;
  std::vector<int> order_;  // scale of each call of a period (one entry: one scale)
  uint64_t seed_ = 0;
  bool with_json_ = false;
};

}  // namespace arenarpc::press
