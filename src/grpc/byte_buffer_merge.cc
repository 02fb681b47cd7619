#include "arenarpc/grpc/byte_buffer_merge.h"

#include <google/protobuf/io/zero_copy_stream.h>
#include <google/protobuf/message_lite.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>

#include <cstdint>
#include <limits>
#include <string>

#include "arenarpc/memory/message_memory.h"

namespace arenarpc::grpc {
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

::grpc::Status ParseError(const google::protobuf::MessageLite& message) {
  std::string text = "Failed to parse " + message.GetTypeName();
  if (std::string missing = message.InitializationErrorString(); !missing.empty()) {
    text += ": missing " + missing;
  }
  return {::grpc::StatusCode::INTERNAL, text};
}

::grpc::Status Merge(grpc_byte_buffer* buffer, google::protobuf::MessageLite& message,
                     const memory::MessagePair* shape) {
  // gRPC's message_decompress filter has already inflated compressed messages, and the reader
  // hands out exactly grpc_byte_buffer_length() bytes, as gRPC's own ProtoBufferReader does.
  const size_t size = grpc_byte_buffer_length(buffer);
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return {::grpc::StatusCode::RESOURCE_EXHAUSTED, "payload larger than 2 GiB"};
  }
  if (shape != nullptr && shape->shapes_requests()) {
    ByteBufferInputStream wire(buffer);
    if (wire.ok()) shape->ShapeRequest(wire);
  }
  ByteBufferInputStream stream(buffer);
  if (!stream.ok()) return {::grpc::StatusCode::INTERNAL, "Couldn't initialize byte buffer reader"};
  if (!message.MergeFromBoundedZeroCopyStream(&stream, static_cast<int>(size))) {
    return ParseError(message);
  }
  return ::grpc::Status::OK;
}

}  // namespace

::grpc::Status MergeFromByteBuffer(grpc_byte_buffer* buffer, google::protobuf::MessageLite& message,
                                   const memory::MessagePair* shape) {
  if (buffer == nullptr) return {::grpc::StatusCode::INTERNAL, "No payload"};
  ::grpc::Status status = Merge(buffer, message, shape);
  grpc_byte_buffer_destroy(buffer);
  return status;
}

}  // namespace arenarpc::grpc
