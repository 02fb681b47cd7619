#include "protocol/frame_codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chain_util.h"
#include "counting_pages.h"
#include "hex.h"
#include "spec_frames.h"

namespace arenarpc::protocol {
namespace {

using namespace arenarpc::testing;

RpcMeta SpecRequestMetaFull() {
  RpcMeta meta;
  meta.mutable_request()->set_service_name("example.EchoService");
  meta.mutable_request()->set_method_name("Echo");
  meta.set_compress_type(0);
  meta.set_correlation_id(kSpecCorrelationId);
  meta.set_content_type(CONTENT_TYPE_PB);
  meta.set_checksum_type(0);
  meta.set_checksum_value("");
  return meta;
}

// --- encode: exactly the spec's bytes

TEST(EncodeFrame, SpecRequestFull) {
  EXPECT_EQ(ToHex(EncodeToString(SpecRequestMetaFull(), SpecPayload(), "")),
            ToHex(SpecRequestFull()));
}

TEST(EncodeFrame, SpecRequestMinimal) {
  RpcMeta meta;
  meta.mutable_request()->set_service_name("example.EchoService");
  meta.mutable_request()->set_method_name("Echo");
  meta.set_correlation_id(kSpecCorrelationId);
  EXPECT_EQ(ToHex(EncodeToString(meta, SpecPayload(), "")), ToHex(SpecRequestMinimal()));
}

TEST(EncodeFrame, SpecRequestWithLogIdAndAttachment) {
  RpcMeta meta = SpecRequestMetaFull();
  meta.mutable_request()->set_log_id(5);
  meta.set_attachment_size(2);
  EXPECT_EQ(ToHex(EncodeToString(meta, SpecPayload(), "AB")), ToHex(SpecRequestLogIdAttachment()));
}

TEST(EncodeFrame, SpecReplies) {
  RpcMeta full;
  full.mutable_response()->set_error_code(0);
  full.set_compress_type(0);
  full.set_correlation_id(kSpecCorrelationId);
  full.set_content_type(CONTENT_TYPE_PB);
  full.set_checksum_type(0);
  full.set_checksum_value("");
  EXPECT_EQ(ToHex(EncodeToString(full, SpecPayload(), "")), ToHex(SpecReplyFull()));

  RpcMeta minimal;
  minimal.mutable_response()->set_error_code(0);
  minimal.set_correlation_id(kSpecCorrelationId);
  EXPECT_EQ(ToHex(EncodeToString(minimal, SpecPayload(), "")), ToHex(SpecReplyMinimal()));

  RpcMeta error = full;
  error.mutable_response()->set_error_code(1002);
  error.mutable_response()->set_error_text(
      "[127.0.0.1:8000][E1002]Fail to find method=example.EchoService/Foo");
  EXPECT_EQ(ToHex(EncodeToString(error, "", "")), ToHex(SpecErrorReply()));
}

TEST(EncodeFrame, AppendsAfterExistingBytesAndMovesPayload) {
  net::BufferChain out;
  out.Append("prefix");
  net::BufferChain payload = Chain(SpecPayload());
  RpcMeta meta;
  meta.mutable_response()->set_error_code(0);
  meta.set_correlation_id(kSpecCorrelationId);
  EncodeFrame(meta, std::move(payload), net::BufferChain(), &out);
  EXPECT_TRUE(payload.empty());
  EXPECT_EQ(out.ToString(), "prefix" + SpecReplyMinimal());
}

// --- decode: the spec's bytes give the spec's fields

TEST(FrameDecoder, SpecRequestFull) {
  net::BufferChain in = Chain(SpecRequestFull());
  FrameDecoder decoder;
  Frame frame;
  ASSERT_EQ(decoder.Next(in, &frame), DecodeStatus::kFrame) << decoder.error();
  EXPECT_TRUE(in.empty());
  EXPECT_FALSE(decoder.attachment_error());
  EXPECT_EQ(frame.meta.request().service_name(), "example.EchoService");
  EXPECT_EQ(frame.meta.request().method_name(), "Echo");
  EXPECT_EQ(frame.meta.correlation_id(), kSpecCorrelationId);
  EXPECT_TRUE(frame.meta.has_compress_type());
  EXPECT_EQ(frame.meta.compress_type(), 0);
  EXPECT_TRUE(frame.meta.has_checksum_value());
  EXPECT_EQ(frame.meta.checksum_value(), "");
  EXPECT_EQ(frame.payload.ToString(), SpecPayload());
  EXPECT_TRUE(frame.attachment.empty());
  EXPECT_EQ(decoder.Next(in, &frame), DecodeStatus::kNeedMore);
}

TEST(FrameDecoder, SpecRequestMinimalAndLogIdAttachment) {
  net::BufferChain in = Chain(SpecRequestMinimal() + SpecRequestLogIdAttachment());
  FrameDecoder decoder;
  Frame frame;
  ASSERT_EQ(decoder.Next(in, &frame), DecodeStatus::kFrame) << decoder.error();
  EXPECT_EQ(frame.meta.request().method_name(), "Echo");
  EXPECT_FALSE(frame.meta.has_compress_type());
  EXPECT_EQ(frame.meta.correlation_id(), kSpecCorrelationId);
  EXPECT_EQ(frame.payload.ToString(), SpecPayload());

  ASSERT_EQ(decoder.Next(in, &frame), DecodeStatus::kFrame) << decoder.error();
  EXPECT_EQ(frame.meta.request().log_id(), 5);
  EXPECT_EQ(frame.meta.attachment_size(), 2);
  EXPECT_EQ(frame.payload.ToString(), SpecPayload());
  EXPECT_EQ(frame.attachment.ToString(), "AB");
  EXPECT_TRUE(in.empty());
}

TEST(FrameDecoder, SpecReplies) {
  net::BufferChain in = Chain(SpecReplyFull() + SpecReplyMinimal() + SpecErrorReply());
  FrameDecoder decoder;
  Frame frame;
  ASSERT_EQ(decoder.Next(in, &frame), DecodeStatus::kFrame);
  EXPECT_TRUE(frame.meta.has_response());
  EXPECT_EQ(frame.meta.response().error_code(), 0);
  EXPECT_EQ(frame.payload.ToString(), SpecPayload());
  ASSERT_EQ(decoder.Next(in, &frame), DecodeStatus::kFrame);
  EXPECT_EQ(frame.meta.correlation_id(), kSpecCorrelationId);
  EXPECT_EQ(frame.payload.ToString(), SpecPayload());
  ASSERT_EQ(decoder.Next(in, &frame), DecodeStatus::kFrame);
  EXPECT_EQ(frame.meta.response().error_code(), 1002);
  EXPECT_EQ(frame.meta.response().error_text(),
            "[127.0.0.1:8000][E1002]Fail to find method=example.EchoService/Foo");
  EXPECT_TRUE(frame.payload.empty());
  EXPECT_TRUE(frame.attachment.empty());
  EXPECT_EQ(decoder.Next(in, &frame), DecodeStatus::kNeedMore);
}

TEST(FrameDecoder, NegativeCorrelationIdRoundTrips) {
  RpcMeta meta;
  meta.mutable_request()->set_service_name("s.S");
  meta.mutable_request()->set_method_name("M");
  meta.set_correlation_id(-5);
  const std::string bytes = EncodeToString(meta, "", "");
  // -5 is a 10-byte two's-complement varint after tag 0x20.
  EXPECT_NE(bytes.find(FromHex("20 fb ff ff ff ff ff ff ff ff 01")), std::string::npos);
  net::BufferChain in = Chain(bytes);
  FrameDecoder decoder;
  Frame frame;
  ASSERT_EQ(decoder.Next(in, &frame), DecodeStatus::kFrame);
  EXPECT_EQ(frame.meta.correlation_id(), -5);
}

TEST(FrameDecoder, ByteByByteFeeding) {
  const std::string stream = SpecRequestLogIdAttachment() + SpecRequestFull() + SpecErrorReply();
  FrameDecoder decoder;
  net::BufferChain in;
  Frame frame;
  std::vector<std::string> payloads, attachments;
  for (char c : stream) {
    in.Append(std::string_view(&c, 1));
    DecodeStatus st;
    while ((st = decoder.Next(in, &frame)) == DecodeStatus::kFrame) {
      payloads.push_back(frame.payload.ToString());
      attachments.push_back(frame.attachment.ToString());
    }
    ASSERT_EQ(st, DecodeStatus::kNeedMore) << decoder.error();
  }
  ASSERT_EQ(payloads.size(), 3u);
  EXPECT_EQ(payloads[0], SpecPayload());
  EXPECT_EQ(attachments[0], "AB");
  EXPECT_EQ(payloads[1], SpecPayload());
  EXPECT_EQ(payloads[2], "");
  EXPECT_TRUE(in.empty());
}

TEST(FrameDecoder, ManyFramesInOneChunkAcrossSmallPages) {
  CountingPages pages(256);
  net::BufferChain in(&pages);
  std::string all;
  for (int i = 0; i < 200; ++i) {
    RpcMeta meta;
    meta.mutable_request()->set_service_name("example.EchoService");
    meta.mutable_request()->set_method_name("Echo");
    meta.set_correlation_id(i);
    const std::string att(i % 7, static_cast<char>('a' + i % 26));
    if (!att.empty()) meta.set_attachment_size(static_cast<int>(att.size()));
    all += EncodeToString(meta, std::string(i, 'p'), att);
  }
  in.Append(all);
  FrameDecoder decoder;
  Frame frame;
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(decoder.Next(in, &frame), DecodeStatus::kFrame) << i << ": " << decoder.error();
    EXPECT_EQ(frame.meta.correlation_id(), i);
    EXPECT_EQ(frame.payload.ToString(), std::string(i, 'p'));
    EXPECT_EQ(frame.attachment.size(), static_cast<size_t>(i % 7));
  }
  EXPECT_EQ(decoder.Next(in, &frame), DecodeStatus::kNeedMore);
  EXPECT_TRUE(in.empty());
}

// --- malformed input (spec §1.1)

void ExpectFatal(const std::string& bytes, const std::string& error_part,
                 size_t max_body = kDefaultMaxBodySize) {
  SCOPED_TRACE(ToHex(bytes.substr(0, 24)));
  net::BufferChain in = Chain(bytes);
  FrameDecoder decoder(max_body);
  Frame frame;
  ASSERT_EQ(decoder.Next(in, &frame), DecodeStatus::kError);
  EXPECT_NE(decoder.error().find(error_part), std::string::npos) << decoder.error();
  // Sticky: even a good frame afterwards is refused.
  net::BufferChain good = Chain(SpecRequestFull());
  EXPECT_EQ(decoder.Next(good, &frame), DecodeStatus::kError);
  EXPECT_EQ(good.size(), SpecRequestFull().size());  // nothing consumed
}

TEST(FrameDecoder, PartialHeaderMatchingMagicWaits) {
  FrameDecoder decoder;
  Frame frame;
  for (size_t n = 0; n < kHeaderSize; ++n) {
    net::BufferChain in = Chain(SpecRequestFull().substr(0, n));
    EXPECT_EQ(decoder.Next(in, &frame), DecodeStatus::kNeedMore) << n;
    EXPECT_EQ(in.size(), n);
  }
}

TEST(FrameDecoder, BadMagic) {
  ExpectFatal("GET / HTTP/1.1\r\n\r\n", "bad magic");
  ExpectFatal("PRPX", "bad magic");
  ExpectFatal("X", "bad magic");  // detected on the first byte
  std::string strm = SpecRequestFull();
  strm.replace(0, 4, "STRM");
  ExpectFatal(strm, "streaming");
}

TEST(FrameDecoder, BodySizeLimitCheckedOnHeaderAlone) {
  // Header only, claiming max+1: rejected before the body arrives.
  ExpectFatal(FromHex("50 52 50 43 00 00 04 01 00 00 00 00"), "max_body_size=1024", 1024);
  ExpectFatal(FromHex("50 52 50 43 ff ff ff ff 00 00 00 00"), "body_size=4294967295");
  // Equal to the limit is allowed.
  FrameDecoder decoder(SpecRequestFull().size() - kHeaderSize);
  net::BufferChain in = Chain(SpecRequestFull());
  Frame frame;
  EXPECT_EQ(decoder.Next(in, &frame), DecodeStatus::kFrame) << decoder.error();
  // Default limit: 64 MiB is accepted (waits for the body), 64 MiB + 1 is not.
  FrameDecoder def;
  net::BufferChain at_limit = Chain(FromHex("50 52 50 43 04 00 00 00 00 00 00 00"));
  EXPECT_EQ(def.Next(at_limit, &frame), DecodeStatus::kNeedMore);
  ExpectFatal(FromHex("50 52 50 43 04 00 00 01 00 00 00 00"), "is larger than max_body_size");
}

TEST(FrameDecoder, MetaSizeLargerThanBody) {
  ExpectFatal(FromHex("50 52 50 43 00 00 00 02 00 00 00 03 00 00"), "meta_size=3 is larger");
}

TEST(FrameDecoder, UndecodableMeta) {
  // meta = 0a 05 (request, 5 bytes) but only 2 bytes inside the meta: truncated.
  ExpectFatal(FromHex("50 52 50 43 00 00 00 02 00 00 00 02 0a 05"), "fail to parse RpcMeta");
  // Invalid wire type 7.
  ExpectFatal(FromHex("50 52 50 43 00 00 00 01 00 00 00 01 0f"), "fail to parse RpcMeta");
}

TEST(FrameDecoder, MissingRequiredFields) {
  RpcMeta meta;
  meta.mutable_request()->set_service_name("example.EchoService");  // no method_name
  meta.set_correlation_id(1);
  const std::string bytes = EncodeToString(meta, SpecPayload(), "");
  ExpectFatal(bytes, "request.method_name");
  RpcMeta chunk;
  chunk.mutable_chunk_info()->set_stream_id(1);  // chunk_id missing
  ExpectFatal(EncodeToString(chunk, "", ""), "chunk_info.chunk_id");
}

TEST(FrameDecoder, AttachmentLargerThanBodyIsNotFatal) {
  RpcMeta meta;
  meta.mutable_request()->set_service_name("example.EchoService");
  meta.mutable_request()->set_method_name("Echo");
  meta.set_correlation_id(9);
  meta.set_attachment_size(9);  // body after meta has only 7 bytes
  net::BufferChain in = Chain(EncodeToString(meta, SpecPayload(), "") + SpecRequestFull());
  FrameDecoder decoder;
  Frame frame;
  ASSERT_EQ(decoder.Next(in, &frame), DecodeStatus::kFrame);
  EXPECT_TRUE(decoder.attachment_error());
  EXPECT_EQ(frame.meta.correlation_id(), 9);
  EXPECT_EQ(frame.payload.size() + frame.attachment.size(), 7u);  // request_size for the error
  // The connection goes on: the next frame decodes normally and clears the flag.
  ASSERT_EQ(decoder.Next(in, &frame), DecodeStatus::kFrame);
  EXPECT_FALSE(decoder.attachment_error());
  EXPECT_EQ(frame.meta.correlation_id(), kSpecCorrelationId);
}

TEST(FrameDecoder, NegativeAttachmentSizeMeansNone) {
  RpcMeta meta;
  meta.mutable_response()->set_error_code(0);
  meta.set_attachment_size(-3);
  net::BufferChain in = Chain(EncodeToString(meta, SpecPayload(), ""));
  FrameDecoder decoder;
  Frame frame;
  ASSERT_EQ(decoder.Next(in, &frame), DecodeStatus::kFrame);
  EXPECT_FALSE(decoder.attachment_error());
  EXPECT_EQ(frame.payload.ToString(), SpecPayload());
}

TEST(FrameDecoder, UnknownFieldsAreSkipped) {
  // Vendor extension field 100 (varint) in RpcMeta: tag (100<<3|0) = a0 06.
  const std::string meta = FromHex("a0 06 01 20 07");
  std::string frame_bytes = FromHex("50 52 50 43 00 00 00 05 00 00 00 05") + meta;
  net::BufferChain in = Chain(frame_bytes);
  FrameDecoder decoder;
  Frame frame;
  ASSERT_EQ(decoder.Next(in, &frame), DecodeStatus::kFrame) << decoder.error();
  EXPECT_EQ(frame.meta.correlation_id(), 7);
}

// Deterministic hostile input (the fuzz target explores further): random bytes after a valid
// magic and random header sizes either decode to frames that add up, wait, or fail with a reason.
TEST(FrameDecoder, RandomHostileInputNeverMisbehaves) {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  int frames = 0, errors = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = "PRPC";
    const uint32_t body = static_cast<uint32_t>(next() % 64);
    const uint32_t meta = static_cast<uint32_t>(next() % 80);
    for (uint32_t v : {body, meta}) {
      for (int shift = 24; shift >= 0; shift -= 8) bytes += static_cast<char>(v >> shift);
    }
    const size_t tail = next() % 80;
    for (size_t i = 0; i < tail; ++i) bytes += static_cast<char>(next());
    net::BufferChain in = Chain(bytes);
    FrameDecoder decoder(48);
    Frame frame;
    for (;;) {
      const size_t before = in.size();
      const DecodeStatus status = decoder.Next(in, &frame);
      if (status == DecodeStatus::kNeedMore) {
        ASSERT_EQ(in.size(), before);
        break;
      }
      if (status == DecodeStatus::kError) {
        ASSERT_FALSE(decoder.error().empty());
        ++errors;
        break;
      }
      ++frames;
      ASSERT_GE(before - in.size(), kHeaderSize + frame.payload.size() + frame.attachment.size());
    }
  }
  EXPECT_GT(errors, 0);
  EXPECT_GT(frames, 0);  // empty metas with small bodies are valid frames
}

// --- heads: a large frame can be refused from its header and meta, before its body is read

std::string LargeFrame(int64_t correlation_id, size_t payload_bytes, int32_t attachment_size = 0) {
  RpcMeta meta;
  meta.mutable_request()->set_service_name("S");
  meta.mutable_request()->set_method_name("M");
  meta.set_correlation_id(correlation_id);
  if (attachment_size != 0) meta.set_attachment_size(attachment_size);
  net::BufferChain out;
  EncodeFrame(meta, Chain(std::string(payload_bytes, 'p')), net::BufferChain(), &out);
  return out.ToString();
}

TEST(FrameDecoder, LargeFrameReportsItsHeadOnceThenTheWholeFrame) {
  const std::string first = LargeFrame(7, kHeadFirstBodySize);
  const std::string second = LargeFrame(8, 10);
  const std::string bytes = first + second;
  FrameDecoder decoder;
  Frame frame;
  net::BufferChain in;
  size_t fed = 0;
  auto feed = [&](size_t n) {
    in.append(bytes.substr(fed, n));
    fed += n;
  };
  feed(20);  // the header and part of the meta
  EXPECT_EQ(decoder.Next(in, &frame, true), DecodeStatus::kNeedMore);
  EXPECT_EQ(decoder.missing(in), first.size() - 20);
  feed(1000);
  ASSERT_EQ(decoder.Next(in, &frame, true), DecodeStatus::kHead) << decoder.error();
  EXPECT_TRUE(decoder.head_reported());
  EXPECT_EQ(frame.meta.correlation_id(), 7);
  EXPECT_EQ(frame.meta.request().method_name(), "M");
  EXPECT_EQ(frame.body_size, first.size() - kHeaderSize);
  EXPECT_EQ(in.size(), 1020u);  // nothing consumed
  EXPECT_EQ(decoder.missing(in), first.size() - 1020);
  EXPECT_EQ(decoder.Next(in, &frame, true), DecodeStatus::kNeedMore);  // the head once
  feed(first.size() - fed + 5);  // the rest and 5 bytes of the next frame
  ASSERT_EQ(decoder.Next(in, &frame, true), DecodeStatus::kFrame) << decoder.error();
  EXPECT_FALSE(decoder.head_reported());
  EXPECT_EQ(frame.meta.correlation_id(), 7);
  const std::string payload = frame.payload.ToString();
  EXPECT_EQ(payload.size(), kHeadFirstBodySize);
  EXPECT_EQ(payload.find_first_not_of('p'), std::string::npos);
  EXPECT_EQ(in.size(), 5u);
  feed(bytes.size() - fed);
  ASSERT_EQ(decoder.Next(in, &frame, true), DecodeStatus::kFrame) << decoder.error();
  EXPECT_EQ(frame.meta.correlation_id(), 8);
  EXPECT_EQ(frame.payload.ToString(), std::string(10, 'p'));
  EXPECT_TRUE(in.empty());
}

TEST(FrameDecoder, HeadsOnlyWhenAskedAndOnlyForLargeBodies) {
  const std::string small = LargeFrame(1, 1000);
  const std::string large = LargeFrame(2, kHeadFirstBodySize);
  FrameDecoder decoder;
  Frame frame;
  net::BufferChain in = Chain(small.substr(0, small.size() - 1));
  EXPECT_EQ(decoder.Next(in, &frame, true), DecodeStatus::kNeedMore);
  in.append(small.substr(small.size() - 1));
  ASSERT_EQ(decoder.Next(in, &frame, true), DecodeStatus::kFrame);
  in.append(large.substr(0, 2000));
  EXPECT_EQ(decoder.Next(in, &frame), DecodeStatus::kNeedMore);  // not asked
  in.append(large.substr(2000));
  ASSERT_EQ(decoder.Next(in, &frame), DecodeStatus::kFrame);
  EXPECT_EQ(frame.meta.correlation_id(), 2);
}

TEST(FrameDecoder, DroppedHeadLeavesTheRestToDiscardAndTheNextFrameDecodes) {
  const std::string refused = LargeFrame(3, 200000);
  const std::string next = LargeFrame(4, 3);
  FrameDecoder decoder;
  Frame frame;
  net::BufferChain in = Chain(refused.substr(0, 5000));
  ASSERT_EQ(decoder.Next(in, &frame, true), DecodeStatus::kHead) << decoder.error();
  EXPECT_EQ(decoder.Drop(in), refused.size() - 5000);
  EXPECT_TRUE(in.empty());
  EXPECT_FALSE(decoder.head_reported());
  in.append(next);  // the caller discarded the rest
  ASSERT_EQ(decoder.Next(in, &frame, true), DecodeStatus::kFrame) << decoder.error();
  EXPECT_EQ(frame.meta.correlation_id(), 4);
  EXPECT_EQ(frame.payload.ToString(), "ppp");
}

TEST(FrameDecoder, HeadKnowsAnAttachmentLargerThanTheBody) {
  const std::string bytes = LargeFrame(5, kHeadFirstBodySize, 1 << 30);
  FrameDecoder decoder;
  Frame frame;
  net::BufferChain in = Chain(bytes.substr(0, 100));
  ASSERT_EQ(decoder.Next(in, &frame, true), DecodeStatus::kHead) << decoder.error();
  EXPECT_TRUE(decoder.attachment_error());
  in.append(bytes.substr(100));
  ASSERT_EQ(decoder.Next(in, &frame, true), DecodeStatus::kFrame);
  EXPECT_TRUE(decoder.attachment_error());
  EXPECT_TRUE(frame.attachment.empty());
  EXPECT_EQ(frame.payload.size(), frame.body_size - frame.meta_size);
}

}  // namespace
}  // namespace arenarpc::protocol
