#pragma once
// SerializedMessage: the wire bytes of one protobuf message, readable more than once.
//
// The runtime hands a call's request bytes to MessagePair::ParseRequest() as a SerializedMessage
// over its receive buffers (no copy). A strategy may read them twice: once to prepare the request
// object (the reuse strategy fits its kept tree to them), once to merge them.

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstddef>
#include <optional>
#include <span>

namespace google::protobuf {
class Message;
}

namespace arenarpc::memory {

enum class ParseResult { kOk, kInvalidBytes, kMissingRequiredFields };

class SerializedMessage {
 public:
  // Number of bytes; at most INT_MAX (protobuf's limit; the runtime rejects larger payloads).
  virtual size_t size() const noexcept = 0;
  // A stream over all the bytes, from the first. Each call starts a new pass and invalidates the
  // stream the previous call returned.
  virtual google::protobuf::io::ZeroCopyInputStream& Read() = 0;

 protected:
  ~SerializedMessage() = default;
};

// The bytes of one contiguous buffer (e.g. a std::string), which must outlive this object.
class SerializedSpan final : public SerializedMessage {
 public:
  explicit SerializedSpan(std::span<const char> bytes) noexcept : bytes_(bytes) {}
  size_t size() const noexcept override { return bytes_.size(); }
  google::protobuf::io::ZeroCopyInputStream& Read() override {
    return stream_.emplace(bytes_.data(), static_cast<int>(bytes_.size()));
  }

 private:
  std::span<const char> bytes_;
  std::optional<google::protobuf::io::ArrayInputStream> stream_;
};

// Merges one pass over `bytes` into `message` (a merge: nothing is cleared first) and checks its
// required fields.
ParseResult MergeSerialized(google::protobuf::Message& message, SerializedMessage& bytes);

}  // namespace arenarpc::memory
