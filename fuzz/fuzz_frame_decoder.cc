// Fuzzes a baidu_std connection's decoding as the server does it: PeekFrameKind() picks, per
// frame, FrameDecoder ("PRPC": header checks, RpcMeta parsing, payload/attachment split; then the
// payload codec on every frame it accepts) or StreamFrameDecoder ("STRM": streaming frames), over
// input that arrives in arbitrary pieces.
// Input: byte 0 chooses how the rest is chopped into reads (bits 0-5), whether large frames are
// reported by their heads (bit 6) and whether a reported head is dropped, its rest skipped as the
// server discards it (bit 7); the rest is the connection's bytes.
#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "protocol/frame_codec.h"
#include "protocol/payload_codec.h"
#include "protocol/stream_frame.h"

namespace {

using arenarpc::net::BufferChain;
using namespace arenarpc::protocol;

constexpr size_t kMaxBody = 1 << 20;

// Every accepted frame must survive re-encoding unchanged, and its payload must either parse or
// fail cleanly.
void CheckFrame(const Frame& frame, bool attachment_error) {
  BufferChain payload, attachment, wire;
  payload.AppendShared(frame.payload);
  attachment.AppendShared(frame.attachment);
  EncodeFrame(frame.meta, std::move(payload), std::move(attachment), &wire);
  FrameDecoder again(kMaxBody + 1024);
  Frame copy;
  FUZZ_CHECK(again.Next(wire, &copy) == DecodeStatus::kFrame);
  FUZZ_CHECK(wire.empty());
  FUZZ_CHECK(again.attachment_error() == attachment_error);
  FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(copy.meta, frame.meta));
  FUZZ_CHECK(copy.payload.ToString() == frame.payload.ToString());
  FUZZ_CHECK(copy.attachment.ToString() == frame.attachment.ToString());

  // Parse the payload as an RpcMeta (a message with nested, required and map fields).
  RpcMeta message;
  std::string detail;
  if (!MergePayload(PayloadEncoding::Of(frame.meta), frame.payload, frame.attachment, &message,
                    &detail, kMaxBody)) {
    FUZZ_CHECK(!detail.empty());
    FUZZ_CHECK(
        !ParseFailureText("request", message, PayloadEncoding::Of(frame.meta), frame.payload.size())
             .empty());
  } else {
    FUZZ_CHECK(message.IsInitialized());
  }
}

// Every accepted stream frame must survive re-encoding unchanged.
void CheckStreamFrame(const StreamFrame& frame) {
  FUZZ_CHECK(frame.meta.IsInitialized());
  BufferChain data, wire;
  data.AppendShared(frame.data);
  EncodeStreamFrame(frame.meta, std::move(data), &wire);
  FUZZ_CHECK(PeekFrameKind(wire) == FrameKind::kStream);
  StreamFrameDecoder again(kMaxBody + 1024);
  StreamFrame copy;
  FUZZ_CHECK(again.Next(wire, &copy) == DecodeStatus::kFrame);
  FUZZ_CHECK(wire.empty());
  FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(copy.meta, frame.meta));
  FUZZ_CHECK(copy.data.ToString() == frame.data.ToString());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t unit = (data[0] & 0x3f) + 1;
  const bool heads = (data[0] & 0x40) != 0, drop_heads = (data[0] & 0x80) != 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);

  FrameDecoder decoder(kMaxBody);
  StreamFrameDecoder stream_decoder(kMaxBody);
  BufferChain in;
  Frame frame;
  StreamFrame stream_frame;
  size_t pos = 0, round = 0, consumed = 0, skip = 0;
  while (pos < bytes.size()) {
    if (skip > 0) {  // a dropped frame's rest, discarded unread
      const size_t n = std::min(skip, bytes.size() - pos);
      pos += n;
      skip -= n;
      consumed += n;
      continue;
    }
    const size_t n = std::min(bytes.size() - pos, unit * (round++ % 4 + 1));
    in.Append(bytes.substr(pos, n));
    pos += n;
    for (;;) {
      const size_t before = in.size();
      const FrameKind kind = PeekFrameKind(in);
      if (kind == FrameKind::kNeedMore) {
        FUZZ_CHECK(before < 4);
        break;
      }
      const bool stream = kind == FrameKind::kStream;
      const DecodeStatus status =
          stream ? stream_decoder.Next(in, &stream_frame) : decoder.Next(in, &frame, heads);
      if (status == DecodeStatus::kHead) {
        FUZZ_CHECK(!stream && heads && decoder.head_reported());
        FUZZ_CHECK(in.size() == before);  // a head eats nothing
        FUZZ_CHECK(frame.body_size >= kHeadFirstBodySize);
        FUZZ_CHECK(decoder.missing(in) == kHeaderSize + frame.body_size - in.size());
        if (drop_heads) {
          skip = decoder.Drop(in);
          FUZZ_CHECK(in.empty() && !decoder.head_reported());
          consumed += before;
          break;
        }
        continue;  // the body comes: kNeedMore until it is in, then the whole frame
      }
      if (status == DecodeStatus::kNeedMore) {
        FUZZ_CHECK(in.size() == before);  // waiting never eats bytes
        break;
      }
      if (status == DecodeStatus::kError) {
        if (stream) {
          FUZZ_CHECK(!stream_decoder.error().empty());
          FUZZ_CHECK(stream_decoder.Next(in, &stream_frame) == DecodeStatus::kError);  // sticky
        } else {
          FUZZ_CHECK(!decoder.error().empty());
          FUZZ_CHECK(decoder.Next(in, &frame) == DecodeStatus::kError);  // sticky
        }
        return 0;
      }
      const size_t frame_bytes = before - in.size();
      FUZZ_CHECK(frame_bytes >= kHeaderSize);
      consumed += frame_bytes;
      if (stream) {
        FUZZ_CHECK(frame_bytes - kHeaderSize >= stream_frame.data.size());
        CheckStreamFrame(stream_frame);
      } else {
        FUZZ_CHECK(frame_bytes - kHeaderSize >= frame.payload.size() + frame.attachment.size());
        CheckFrame(frame, decoder.attachment_error());
      }
    }
  }
  FUZZ_CHECK(consumed + in.size() == bytes.size());
  return 0;
}
