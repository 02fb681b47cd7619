#include "builtin/stream_fields.h"

namespace arenarpc::builtin {

void WriteStreamTrafficFields(JsonWriter& json, const stats::StreamTraffic& traffic,
                              uint64_t buffered_in_bytes, uint64_t buffered_out_bytes) {
  json.Field("messages_in", traffic.messages_in)
      .Field("bytes_in", traffic.bytes_in)
      .Field("messages_out", traffic.messages_out)
      .Field("bytes_out", traffic.bytes_out)
      .Field("buffered_in_bytes", buffered_in_bytes)
      .Field("buffered_out_bytes", buffered_out_bytes);
}

std::string StreamTrafficText(const stats::StreamTraffic& traffic, uint64_t buffered_in_bytes,
                              uint64_t buffered_out_bytes) {
  return "in " + std::to_string(traffic.messages_in) + " msgs / " +
         std::to_string(traffic.bytes_in) + " B, out " + std::to_string(traffic.messages_out) +
         " msgs / " + std::to_string(traffic.bytes_out) + " B, buffered in " +
         std::to_string(buffered_in_bytes) + " B / out " + std::to_string(buffered_out_bytes) +
         " B";
}

}  // namespace arenarpc::builtin
