#include "press/request_source.h"

#include <google/protobuf/util/json_util.h>

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
    : scale_(payload_scale), seed_(seed), with_json_(with_json) {
  example::PayloadGenerator generator(payload_scale, seed);  // validates payload_scale
  ring_.reserve(static_cast<size_t>(ring > 0 ? ring : 0));
  for (int i = 0; i < ring; ++i) {
    auto request = std::make_shared<PressRequest>();
    DrawRequest(generator, request.get(), with_json);
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
  example::PayloadGenerator generator(scale_, seed_ + next_.fetch_add(1, std::memory_order_relaxed)
                                                          * 0x9e3779b97f4a7c15ULL);
  auto request = std::make_shared<PressRequest>();
  DrawRequest(generator, request.get(), with_json_);
  return request;
}

}  // namespace arenarpc::press
