#pragma once
// baidu_std streaming frames (docs/protocol.md, "Streaming"): "STRM" | body_size BE32 |
// meta_size BE32 | StreamFrameMeta | data. They share a connection with "PRPC" frames.
// Bytes in, frames out; no sockets here.

#include <cstdint>
#include <string>

#include "arenarpc/buffer_chain.h"
#include "protocol/frame_codec.h"
#include "protocol/rpc_meta.pb.h"

namespace arenarpc::protocol {

// What the next frame on a baidu_std connection is, from its first bytes.
enum class FrameKind {
  kNeedMore,  // fewer than 4 bytes, and they start both magics or one of them
  kRpc,       // "PRPC"
  kStream,    // "STRM"
  kOther,     // neither (a framing error)
};
FrameKind PeekFrameKind(const net::BufferChain& input);

struct StreamFrame {
  StreamFrameMeta meta;
  net::BufferChain data;  // shares the receive buffer's blocks
};

// Cuts one "STRM" frame off the input (call after PeekFrameKind() said kStream). Fatal errors
// (body_size > max_body_size, meta_size > body_size, an unparsable meta) are sticky.
class StreamFrameDecoder {
 public:
  explicit StreamFrameDecoder(size_t max_body_size = kDefaultMaxBodySize);
  DecodeStatus Next(net::BufferChain& in, StreamFrame* out);
  const std::string& error() const noexcept { return error_; }

 private:
  size_t max_body_size_;
  std::string error_;
  bool failed_ = false;
};

// Appends one frame: header + meta + data (moved, no copy).
void EncodeStreamFrame(const StreamFrameMeta& meta, net::BufferChain&& data, net::BufferChain* out);

}  // namespace arenarpc::protocol
