#pragma once
// baidu_std framing (spec §1): "PRPC" | body_size BE32 | meta_size BE32 | meta | payload | attachment.
// Bytes in, frames out; no sockets here.

#include <cstdint>
#include <string>
#include <string_view>

#include <google/protobuf/message_lite.h>

#include "arenarpc/buffer_chain.h"
#include "protocol/rpc_meta.pb.h"

namespace arenarpc::protocol {

// The first 4 bytes of a baidu_std RPC frame and of a stream frame.
inline constexpr char kRpcFrameMagic[4] = {'P', 'R', 'P', 'C'};
inline constexpr char kStreamFrameMagic[4] = {'S', 'T', 'R', 'M'};

inline constexpr size_t kHeaderSize = 12;
inline constexpr size_t kDefaultMaxBodySize = 64u << 20;  // 67,108,864 bytes, inclusive

// One decoded frame. payload and attachment share the receive buffer's blocks (no copy).
struct Frame {
  RpcMeta meta;
  net::BufferChain payload;     // as on the wire (maybe compressed)
  net::BufferChain attachment;  // meta.attachment_size() bytes (0 if absent)
  size_t meta_size = 0;         // the meta's bytes on the wire
  size_t body_size = 0;         // meta + payload + attachment bytes on the wire
};

enum class DecodeStatus {
  kNeedMore,   // not a whole frame buffered yet; call again after more bytes arrive
  kFrame,      // one frame was cut off the input into *out
  kError,      // fatal framing error: close the connection (error() says why)
  // Next(..., report_heads): the header and meta of a large frame are in (out->meta parsed,
  // attachment_error() known) but not its body. Then either Next() again (the meta is not parsed
  // twice; kFrame once the body is in) or Drop() the frame.
  kHead,
};

// A frame whose body is at least this large is reported by its head (kHead) before its body is
// read: a server can refuse it and leave the rest of its bytes unread.
inline constexpr size_t kHeadFirstBodySize = 64u << 10;

// Incremental decoder. Call Next() repeatedly on the connection's input chain: it consumes at most
// one frame per call. Fatal errors (bad magic, body_size > max_body_size — detected as soon as the
// 12 header bytes are in, meta_size > body_size, undecodable meta or missing required fields) are
// sticky. attachment_size larger than the body is NOT fatal here: the frame is returned with
// attachment_error() set, so the server can answer EREQUEST and the client fail the call (spec §1.1).
class FrameDecoder {
 public:
  explicit FrameDecoder(size_t max_body_size = kDefaultMaxBodySize);
  // report_heads: a frame of kHeadFirstBodySize or more whose body is not all in yields kHead
  // once, as soon as its header and meta are.
  DecodeStatus Next(net::BufferChain& in, Frame* out, bool report_heads = false);
  // After kHead: drops the frame — its bytes in `in` (all of `in`: the frame is its last bytes)
  // — and returns how many of its bytes are still to come, which the caller discards unread.
  size_t Drop(net::BufferChain& in);
  // Bytes of the current frame not yet in `in` if it is a large one (kHeadFirstBodySize or
  // more) and its header is in; else 0.
  size_t missing(const net::BufferChain& in) const noexcept;
  bool head_reported() const noexcept { return head_body_size_ > 0; }
  const std::string& error() const noexcept { return error_; }
  bool attachment_error() const noexcept { return attachment_error_; }

 private:
  DecodeStatus ParseMeta(net::BufferChain& in, size_t body_size, size_t meta_size, Frame* out);
  // Sticky: every later Next() answers kError; error() says why.
  DecodeStatus Fail(std::string message);
  // Cuts the body after the meta off `in` into payload and attachment.
  void CutData(net::BufferChain& in, Frame* out);

  size_t max_body_size_;
  std::string error_;
  size_t head_body_size_ = 0;  // > 0: the current frame's head was reported (meta in *out)
  bool failed_ = false;
  bool attachment_error_ = false;
};

// Appends a 12-byte header — `magic`, body_size = meta + data_size, meta_size (both BE32) — and
// the serialized meta; the caller appends data_size bytes of data. Shared by "PRPC" and "STRM"
// frames. Throws std::length_error if the body does not fit 32 bits.
void EncodeHeaderAndMeta(std::string_view magic, const google::protobuf::MessageLite& meta,
                         size_t data_size, net::BufferChain* out);
// Reads body_size and meta_size from a 12-byte header.
void DecodeHeaderSizes(const unsigned char* header, size_t* body_size, size_t* meta_size);

// Appends one frame: header + serialized meta + payload bytes + attachment bytes. Sets nothing in
// meta: the caller fills attachment_size etc. payload/attachment are moved into out (no copy).
void EncodeFrame(const RpcMeta& meta, net::BufferChain&& payload, net::BufferChain&& attachment,
                 net::BufferChain* out);

}  // namespace arenarpc::protocol
