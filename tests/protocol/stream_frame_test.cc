// "STRM" frames (docs/protocol.md, "Streaming"): our encoder's bytes against frames written out
// by hand from the spec, decoding, and the fatal cases.
#include "protocol/stream_frame.h"

#include <gtest/gtest.h>

#include "hex.h"
#include "protocol/wire_protocol.h"

namespace arenarpc::protocol {
namespace {

using arenarpc::testing::FromHex;
using arenarpc::testing::ToHex;

std::string Encode(const StreamFrameMeta& meta, std::string_view data = {}) {
  net::BufferChain payload, out;
  payload.append(data);
  EncodeStreamFrame(meta, std::move(payload), &out);
  return out.to_string();
}

StreamFrameMeta Meta(int64_t stream_id, FrameType type) {
  StreamFrameMeta meta;
  meta.set_stream_id(stream_id);
  meta.set_frame_type(type);
  return meta;
}

TEST(StreamFrameTest, FramesMatchTheSpecBytes) {
  // DATA "hi" from stream 3 to stream 2: meta {1:2, 2:3, 3:DATA, 4:false}.
  StreamFrameMeta data = Meta(2, FRAME_TYPE_DATA);
  data.set_source_stream_id(3);
  data.set_has_continuation(false);
  EXPECT_EQ("53 54 52 4d 00 00 00 0a 00 00 00 08 08 02 10 03 18 03 20 00 68 69",
            ToHex(Encode(data, "hi")));
  // FEEDBACK: consumed_size 300 (varint ac 02) in sub-message 5.
  StreamFrameMeta feedback = Meta(2, FRAME_TYPE_FEEDBACK);
  feedback.set_source_stream_id(3);
  feedback.mutable_feedback()->set_consumed_size(300);
  EXPECT_EQ("53 54 52 4d 00 00 00 0b 00 00 00 0b 08 02 10 03 18 04 2a 03 08 ac 02",
            ToHex(Encode(feedback)));
  // RST names only the receiver; CLOSE also the sender.
  EXPECT_EQ("53 54 52 4d 00 00 00 04 00 00 00 04 08 02 18 01",
            ToHex(Encode(Meta(2, FRAME_TYPE_RST))));
  StreamFrameMeta close = Meta(2, FRAME_TYPE_CLOSE);
  close.set_source_stream_id(3);
  EXPECT_EQ("53 54 52 4d 00 00 00 06 00 00 00 06 08 02 10 03 18 02", ToHex(Encode(close)));
}

TEST(StreamFrameTest, DecodesWhatItEncodesAcrossPartialInput) {
  StreamFrameMeta data = Meta(1LL << 40, FRAME_TYPE_DATA);
  data.set_source_stream_id(-5);  // negative ids are 10-byte varints, not zigzag
  const std::string bytes = Encode(data, "payload") + Encode(Meta(9, FRAME_TYPE_RST));
  StreamFrameDecoder decoder;
  net::BufferChain in;
  StreamFrame frame;
  for (size_t i = 0; i + 1 < bytes.size() - 16; ++i) {
    in.append(std::string_view(bytes).substr(i, 1));
    ASSERT_EQ(DecodeStatus::kNeedMore, decoder.Next(in, &frame)) << i;
  }
  in.append(std::string_view(bytes).substr(bytes.size() - 17));
  ASSERT_EQ(DecodeStatus::kFrame, decoder.Next(in, &frame));
  EXPECT_EQ(1LL << 40, frame.meta.stream_id());
  EXPECT_EQ(-5, frame.meta.source_stream_id());
  EXPECT_EQ("payload", frame.data.to_string());
  ASSERT_EQ(DecodeStatus::kFrame, decoder.Next(in, &frame));
  EXPECT_EQ(FRAME_TYPE_RST, frame.meta.frame_type());
  EXPECT_TRUE(in.empty());
}

TEST(StreamFrameTest, FatalErrorsAreSticky) {
  {  // meta_size > body_size
    StreamFrameDecoder decoder;
    net::BufferChain in;
    in.append(FromHex("53 54 52 4d 00 00 00 02 00 00 00 03 08 02"));
    StreamFrame frame;
    EXPECT_EQ(DecodeStatus::kError, decoder.Next(in, &frame));
    EXPECT_NE(std::string::npos, decoder.error().find("meta_size=3"));
    EXPECT_EQ(DecodeStatus::kError, decoder.Next(in, &frame));
  }
  {  // body_size over the bound, known from the header alone
    StreamFrameDecoder decoder(100);
    net::BufferChain in;
    in.append(FromHex("53 54 52 4d 00 00 00 65 00 00 00 04"));
    StreamFrame frame;
    EXPECT_EQ(DecodeStatus::kError, decoder.Next(in, &frame));
  }
  {  // a meta without the required stream_id
    StreamFrameDecoder decoder;
    net::BufferChain in;
    in.append(FromHex("53 54 52 4d 00 00 00 02 00 00 00 02 18 03"));
    StreamFrame frame;
    EXPECT_EQ(DecodeStatus::kError, decoder.Next(in, &frame));
  }
}

TEST(StreamFrameTest, PeeksTheFrameKindAndRecognisesStrmAsBaiduStd) {
  auto kind = [](std::string_view bytes) {
    net::BufferChain in;
    in.append(bytes);
    return PeekFrameKind(in);
  };
  EXPECT_EQ(FrameKind::kNeedMore, kind(""));
  EXPECT_EQ(FrameKind::kNeedMore, kind("ST"));
  EXPECT_EQ(FrameKind::kNeedMore, kind("PR"));
  EXPECT_EQ(FrameKind::kStream, kind("STRM"));
  EXPECT_EQ(FrameKind::kRpc, kind("PRPC\0"));
  EXPECT_EQ(FrameKind::kOther, kind("SX"));
  EXPECT_EQ(FrameKind::kOther, kind("GET "));
  EXPECT_EQ(WireProtocol::kBaiduStd, RecognizeProtocol("STRM\0\0\0\4"));
  EXPECT_EQ(WireProtocol::kNeedMore, RecognizeProtocol("STR"));
}

}  // namespace
}  // namespace arenarpc::protocol
