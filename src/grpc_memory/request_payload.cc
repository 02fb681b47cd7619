#include "arenarpc/grpc_memory/request_payload.h"

#include <google/protobuf/io/zero_copy_stream.h>
#include <google/protobuf/message.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "arenarpc/memory/message_memory.h"

namespace arenarpc::grpc_memory {
namespace {

// Reads a grpc_byte_buffer slice by slice, without copying (the slices stay owned by the buffer).
class ByteBufferInputStream final : public google::protobuf::io::ZeroCopyInputStream {
 public:
  explicit ByteBufferInputStream(grpc_byte_buffer* buffer)
      : ok_(grpc_byte_buffer_reader_init(&reader_, buffer) != 0) {}
  ~ByteBufferInputStream() override {
    if (ok_) grpc_byte_buffer_reader_destroy(&reader_);
  }
  ByteBufferInputStream(const ByteBufferInputStream&) = delete;
  ByteBufferInputStream& operator=(const ByteBufferInputStream&) = delete;

  bool ok() const { return ok_; }

  bool Next(const void** data, int* size) override {
    if (backed_up_ > 0) {  // hand back the tail of the current slice first
      *data = GRPC_SLICE_END_PTR(*current_) - backed_up_;
      *size = backed_up_;
      byte_count_ += backed_up_;
      backed_up_ = 0;
      return true;
    }
    if (!grpc_byte_buffer_reader_peek(&reader_, &current_)) return false;
    *data = GRPC_SLICE_START_PTR(*current_);
    *size = static_cast<int>(GRPC_SLICE_LENGTH(*current_));
    byte_count_ += *size;
    return true;
  }

  void BackUp(int count) override {
    backed_up_ = count;
    byte_count_ -= count;
  }

  bool Skip(int count) override {
    const void* data;
    int size;
    while (count > 0 && Next(&data, &size)) {
      if (size > count) {
        BackUp(size - count);
        return true;
      }
      count -= size;
    }
    return count == 0;
  }

  int64_t ByteCount() const override { return byte_count_; }

 private:
  grpc_byte_buffer_reader reader_{};
  bool ok_;
  grpc_slice* current_ = nullptr;
  int backed_up_ = 0;
  int64_t byte_count_ = 0;
};

// The payload as a memory::SerializedMessage: each Read() starts a new reader over the slices.
class ByteBufferBytes final : public memory::SerializedMessage {
 public:
  ByteBufferBytes(grpc_byte_buffer* buffer, size_t size) : buffer_(buffer), size_(size) {}
  size_t size() const noexcept override { return size_; }
  google::protobuf::io::ZeroCopyInputStream& Read() override {
    if (!std::exchange(unread_, false)) {
      stream_.reset();
      stream_.emplace(buffer_);
    }
    return *stream_;
  }
  // Opens the first pass (handed out by the next Read()); false if gRPC cannot read the buffer.
  bool Open() {
    unread_ = true;
    return stream_.emplace(buffer_).ok();
  }

 private:
  grpc_byte_buffer* buffer_;
  size_t size_;
  std::optional<ByteBufferInputStream> stream_;
  bool unread_ = false;
};

::grpc::Status ParseError(const google::protobuf::MessageLite& message) {
  std::string text = "Failed to parse " + message.GetTypeName();
  if (std::string missing = message.InitializationErrorString(); !missing.empty()) {
    text += ": missing " + missing;
  }
  return {::grpc::StatusCode::INTERNAL, text};
}

::grpc::Status Parse(grpc_byte_buffer* buffer, const memory::MessagePair& pair) {
  // gRPC's message_decompress filter has already inflated compressed messages, and the reader
  // hands out exactly grpc_byte_buffer_length() bytes, as gRPC's own ProtoBufferReader does.
  const size_t size = grpc_byte_buffer_length(buffer);
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return {::grpc::StatusCode::RESOURCE_EXHAUSTED, "payload larger than 2 GiB"};
  }
  ByteBufferBytes bytes(buffer, size);
  if (!bytes.Open()) {
    return {::grpc::StatusCode::INTERNAL, "Couldn't initialize byte buffer reader"};
  }
  if (pair.ParseRequest(bytes) != memory::ParseResult::kOk) return ParseError(*pair.request());
  return ::grpc::Status::OK;
}

}  // namespace

::grpc::Status ParseRequestPayload(grpc_byte_buffer* buffer, const memory::MessagePair& pair) {
  if (buffer == nullptr) return {::grpc::StatusCode::INTERNAL, "No payload"};
  ::grpc::Status status = Parse(buffer, pair);
  grpc_byte_buffer_destroy(buffer);
  return status;
}

}  // namespace arenarpc::grpc_memory
