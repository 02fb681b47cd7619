#include "press/request_source.h"

#include <google/protobuf/util/json_util.h>

#include <map>
#include <stdexcept>
#include <string>

#include "echo/echo_payload.pb.h"

namespace arenarpc::press {
namespace {

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;  // what brpc's json2pb expects too
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);  // cannot fail for a valid message
  return json;
}

// Scale 0: an empty payload.
void DrawScaled(int scale, example::PayloadGenerator* generator, PressRequest* out,
                bool with_json) {
  if (scale > 0) return DrawRequest(*generator, out, with_json);
  example::EchoRequest request;
  request.mutable_payload();
  out->is_echo = true;
  out->echo.Clear();
  out->json = with_json ? ToJson(request) : std::string();
}

}  // namespace

void DrawRequest(example::PayloadGenerator& generator, PressRequest* out, bool with_json) {
  example::EchoRequest request;
  generator.Fill(request.mutable_payload());
  out->is_echo = true;
  out->echo.Clear();
  request.payload().SerializeToString(out->echo.mutable_payload());
  out->json = with_json ? ToJson(request) : std::string();
}

std::shared_ptr<const PressRequest> MakeUserRequest(const google::protobuf::Message& message,
                                                    bool with_json) {
  auto request = std::make_shared<PressRequest>();
  request->is_echo = false;
  request->user.ParseFromString(message.SerializeAsString());
  if (with_json) request->json = ToJson(message);
  return request;
}

RequestSource::RequestSource(int payload_scale, int ring, uint64_t seed, bool with_json)
    : RequestSource(std::vector<PayloadShare>{{payload_scale, 1}}, ring, seed, with_json) {
  if (payload_scale <= 0) {
    throw std::invalid_argument("payload_scale must be > 0, got " + std::to_string(payload_scale));
  }
}

RequestSource::RequestSource(const std::vector<PayloadShare>& mix, int ring, uint64_t seed,
                             bool with_json)
    : order_(MixOrder(mix)), seed_(seed), with_json_(with_json) {
  if (order_.empty()) throw std::invalid_argument("the payload mix is empty");
  std::map<int, example::PayloadGenerator> generators;  // one per scale, each seeded with `seed`
  for (const PayloadShare& share : mix) {
    if (share.scale > 0) generators.try_emplace(share.scale, share.scale, seed);
  }
  const size_t period = order_.size();
  const size_t size =
      ring > 0 ? (static_cast<size_t>(ring) + period - 1) / period * period : size_t{0};
  ring_.reserve(size);
  for (size_t i = 0; i < size; ++i) {
    const int scale = order_[i % period];
    auto request = std::make_shared<PressRequest>();
    const auto generator = generators.find(scale);
    DrawScaled(scale, generator == generators.end() ? nullptr : &generator->second,
               request.get(), with_json);
    ring_.push_back(std::move(request));
  }
  MeasureRing();
}

RequestSource::RequestSource(std::vector<std::shared_ptr<const PressRequest>> requests)
    : ring_(std::move(requests)) {
  MeasureRing();
}

void RequestSource::MeasureRing() {
  if (ring_.empty()) return;
  double total = 0;
  for (const auto& request : ring_) total += static_cast<double>(request->binary().ByteSizeLong());
  mean_bytes_ = total / static_cast<double>(ring_.size());
}

std::shared_ptr<const PressRequest> RequestSource::Next() {
  if (!ring_.empty()) {
    return ring_[next_.fetch_add(1, std::memory_order_relaxed) % ring_.size()];
  }
  // A generator is just a 64-bit state: give each call its own stream, no lock between threads.
  const uint64_t call = next_.fetch_add(1, std::memory_order_relaxed);
  const int scale = order_[call % order_.size()];
  auto request = std::make_shared<PressRequest>();
  if (scale == 0) {
    DrawScaled(0, nullptr, request.get(), with_json_);
    return request;
  }
  example::PayloadGenerator generator(scale, seed_ + call * 0x9e3779b97f4a7c15ULL);
  DrawRequest(generator, request.get(), with_json_);
  return request;
}

}  // namespace arenarpc::press
