#include "protocol/http/status_details.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <cstdint>
#include <functional>

namespace arenarpc::protocol {

namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::internal::WireFormatLite;

// Calls on_field(field, bytes) for each length-delimited field numbered up to `last` (the rest
// are skipped); false: the bytes are not a protobuf message, or on_field said so.
bool ReadMessage(std::string_view bytes, uint32_t last,
                 const std::function<bool(uint32_t field, std::string_view value)>& on_field) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                      static_cast<int>(bytes.size()));
  while (const uint32_t tag = in.ReadTag()) {
    const uint32_t field = WireFormatLite::GetTagFieldNumber(tag);
    if (field <= last &&
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      uint32_t length = 0;
      const void* data = nullptr;
      int available = 0;
      if (!in.ReadVarint32(&length) || !in.GetDirectBufferPointer(&data, &available) ||
          static_cast<uint32_t>(available) < length) {
        if (length != 0) return false;
      }
      if (!on_field(field, std::string_view(static_cast<const char*>(data), length))) return false;
      in.Skip(static_cast<int>(length));
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
  }
  return in.ConsumedEntireMessage();
}

}  // namespace

bool ParseStatusDetails(std::string_view status, std::vector<StatusDetail>* details) {
  details->clear();
  const bool ok = ReadMessage(status, 3, [&](uint32_t field, std::string_view any) {
    if (field != 3) return true;  // the message (2)
    StatusDetail& detail = details->emplace_back();
    return ReadMessage(any, 2, [&](uint32_t any_field, std::string_view value) {
      (any_field == 1 ? detail.type_url : detail.value).assign(value);
      return true;
    });
  });
  if (!ok) details->clear();
  return ok;
}

}  // namespace arenarpc::protocol
