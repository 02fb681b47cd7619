#include "client/baidu_std_request_frame.h"

#include <algorithm>
#include <limits>

#include "protocol/frame_codec.h"
#include "protocol/rpc_meta.pb.h"

namespace arenarpc::client {

int32_t TimeoutMsLeft(std::chrono::steady_clock::time_point deadline,
                      std::chrono::steady_clock::time_point now) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
  return static_cast<int32_t>(
      std::clamp<int64_t>(left.count(), 1, std::numeric_limits<int32_t>::max()));
}

RestampResult RestampTimeout(BaiduStdRequestFrame& frame,
                             std::chrono::steady_clock::time_point now) {
  if (frame.deadline == std::chrono::steady_clock::time_point::max()) {
    return RestampResult::kUnchanged;
  }
  if (now >= frame.deadline) return RestampResult::kExpired;
  const int32_t left = TimeoutMsLeft(frame.deadline, now);
  if (left >= frame.timeout_ms) return RestampResult::kUnchanged;

  unsigned char header[protocol::kHeaderSize];
  if (frame.bytes.CopyTo(header, sizeof header) != sizeof header) return RestampResult::kMalformed;
  size_t body_size = 0, meta_size = 0;
  protocol::DecodeHeaderSizes(header, &body_size, &meta_size);
  if (meta_size > body_size || frame.bytes.size() != protocol::kHeaderSize + body_size) {
    return RestampResult::kMalformed;
  }
  net::BufferChain rest = std::move(frame.bytes);
  rest.PopFront(protocol::kHeaderSize);
  protocol::RpcMeta meta;
  {
    net::BufferChainInputStream meta_bytes(rest, meta_size);
    if (!meta.ParseFromZeroCopyStream(&meta_bytes) || !meta.has_request()) {
      frame.bytes.Append(std::string_view(reinterpret_cast<const char*>(header), sizeof header));
      frame.bytes.Append(std::move(rest));
      return RestampResult::kMalformed;
    }
  }
  rest.PopFront(meta_size);
  meta.mutable_request()->set_timeout_ms(left);
  // The same header and meta encoding as a frame packed now (EncodeFrame): a shorter varint
  // shrinks meta_size and body_size with it.
  protocol::EncodeHeaderAndMeta("PRPC", meta, rest.size(), &frame.bytes);
  frame.bytes.Append(std::move(rest));
  frame.timeout_ms = left;
  return RestampResult::kRestamped;
}

}  // namespace arenarpc::client
