#include "press/request_source.h"

namespace arenarpc::press {

void DrawRequest(example::PayloadGenerator& generator, RawEchoRequest* out) {
  example::ComplexPayload payload;
  generator.Fill(&payload);
  out->Clear();
  payload.SerializeToString(out->mutable_payload());
}

RequestSource::RequestSource(int payload_scale, int ring, uint64_t seed)
    : scale_(payload_scale), seed_(seed) {
  example::PayloadGenerator generator(payload_scale, seed);  // validates payload_scale
  ring_.reserve(static_cast<size_t>(ring > 0 ? ring : 0));
  double total = 0;
  for (int i = 0; i < ring; ++i) {
    auto request = std::make_shared<RawEchoRequest>();
    DrawRequest(generator, request.get());
    total += static_cast<double>(request->ByteSizeLong());
    ring_.push_back(std::move(request));
  }
  if (ring > 0) mean_bytes_ = total / ring;
}

std::shared_ptr<const RawEchoRequest> RequestSource::Next() {
  if (!ring_.empty()) {
    return ring_[next_.fetch_add(1, std::memory_order_relaxed) % ring_.size()];
  }
  // A generator is just a 64-bit state: give each call its own stream, no lock between threads.
  example::PayloadGenerator generator(scale_, seed_ + next_.fetch_add(1, std::memory_order_relaxed)
                                                          * 0x9e3779b97f4a7c15ULL);
  auto request = std::make_shared<RawEchoRequest>();
  DrawRequest(generator, request.get());
  return request;
}

}  // namespace arenarpc::press
