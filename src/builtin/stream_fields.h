#pragma once
// How the pages write a stream's traffic (stats/stream_info.h): the same JSON field names and
// the same short text on /status and /connections.

#include <string>

#include "builtin/page_format.h"
#include "stats/stream_info.h"

namespace arenarpc::builtin {

// messages_in, bytes_in, messages_out, bytes_out, buffered_in_bytes, buffered_out_bytes.
void WriteStreamTrafficFields(JsonWriter& json, const stats::StreamTraffic& traffic,
                              uint64_t buffered_in_bytes, uint64_t buffered_out_bytes);
// "in 3 msgs / 120 B, out 5 msgs / 200 B, buffered in 0 B / out 64 B"
std::string StreamTrafficText(const stats::StreamTraffic& traffic, uint64_t buffered_in_bytes,
                              uint64_t buffered_out_bytes);

}  // namespace arenarpc::builtin
