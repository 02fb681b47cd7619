#include "protocol/payload_codec.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "chain_util.h"
#include "counting_pages.h"
#include "hex.h"
#include "protocol/checksum.h"
#include "protocol/compression.h"
#include "protocol/crc32c.h"

namespace arenarpc::protocol {
namespace {

using namespace arenarpc::testing;

// RpcMeta serves as a test message: it has nested messages, a map and required fields.
RpcMeta SampleMessage(size_t text_bytes) {
  RpcMeta m;
  m.mutable_request()->set_service_name("example.EchoService");
  m.mutable_request()->set_method_name(std::string(text_bytes, 'x') + "tail");
  m.set_correlation_id(-1);
  m.set_authentication_data(std::string(text_bytes / 3, '\x01'));
  return m;
}

std::string Compressed(int type, std::string_view plain) {
  net::BufferChain out;
  std::string error;
  EXPECT_TRUE(Compress(type, Chain(plain), &out, &error)) << error;
  return out.ToString();
}

// --- compression

TEST(Compression, NamesAsBrpcPrintsThem) {
  EXPECT_STREQ(CompressTypeName(0), "none");
  EXPECT_STREQ(CompressTypeName(1), "snappy");
  EXPECT_STREQ(CompressTypeName(2), "gzip");
  EXPECT_STREQ(CompressTypeName(3), "zlib");
  EXPECT_STREQ(CompressTypeName(4), "unknown");  // lz4: no codec, as in brpc
  EXPECT_STREQ(CompressTypeName(-1), "unknown");
  EXPECT_FALSE(IsSupportedCompressType(4));
}

class CompressionRoundTrip : public ::testing::TestWithParam<int> {};

TEST_P(CompressionRoundTrip, SmallLargeAndMultiBlock) {
  const int type = GetParam();
  CountingPages pages(512);  // the compressed input spans many blocks
  for (size_t n : {0u, 1u, 7u, 1000u, 70000u, 300000u}) {
    std::string plain;
    for (size_t i = 0; i < n; ++i) plain += static_cast<char>((i * i + i / 7) % 253);
    net::BufferChain in(&pages);
    for (size_t i = 0; i < n; i += 300) in.Append(std::string_view(plain).substr(i, 300));
    net::BufferChain compressed(&pages), back(&pages);
    std::string error;
    ASSERT_TRUE(Compress(type, in, &compressed, &error)) << error;
    ASSERT_TRUE(Decompress(type, compressed, &back, &error)) << n << ": " << error;
    EXPECT_EQ(back.size(), n);
    EXPECT_TRUE(back.ToString() == plain) << "type " << type << " size " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(AllCodecs, CompressionRoundTrip, ::testing::Values(0, 1, 2, 3));

TEST(Compression, WireFormatsAreTheStandardOnes) {
  const std::string plain = "hello hello hello hello";
  const std::string gz = Compressed(COMPRESS_TYPE_GZIP, plain);
  EXPECT_EQ(ToHex(gz.substr(0, 3)), "1f 8b 08");  // RFC 1952 member header
  const std::string zl = Compressed(COMPRESS_TYPE_ZLIB, plain);
  EXPECT_EQ(static_cast<unsigned char>(zl[0]) & 0x0f, 8);  // RFC 1950: CM=8 (deflate)
  EXPECT_EQ(((static_cast<unsigned char>(zl[0]) << 8) | static_cast<unsigned char>(zl[1])) % 31, 0);
  // zlib's own uncompress() reads our zlib bytes.
  std::string out(plain.size(), '\0');
  uLongf out_len = out.size();
  ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(out.data()), &out_len,
                       reinterpret_cast<const Bytef*>(zl.data()), zl.size()),
            Z_OK);
  EXPECT_EQ(out, plain);
  // Raw snappy block: starts with the varint uncompressed length (23 = 0x17), no stream header.
  const std::string sn = Compressed(COMPRESS_TYPE_SNAPPY, plain);
  EXPECT_EQ(static_cast<unsigned char>(sn[0]), 23);
}

TEST(Compression, GzipAndZlibAreNotInterchangeable) {
  const std::string plain = "some payload bytes";
  std::string error;
  net::BufferChain out;
  EXPECT_FALSE(
      Decompress(COMPRESS_TYPE_GZIP, Chain(Compressed(COMPRESS_TYPE_ZLIB, plain)), &out, &error));
  EXPECT_NE(error.find("bad gzip data"), std::string::npos) << error;
  EXPECT_FALSE(
      Decompress(COMPRESS_TYPE_ZLIB, Chain(Compressed(COMPRESS_TYPE_GZIP, plain)), &out, &error));
  EXPECT_NE(error.find("bad zlib data"), std::string::npos) << error;
  EXPECT_FALSE(
      Decompress(COMPRESS_TYPE_SNAPPY, Chain(Compressed(COMPRESS_TYPE_GZIP, plain)), &out, &error));
  EXPECT_TRUE(out.empty());  // nothing appended on failure
}

TEST(Compression, CorruptTruncatedTrailingAndUnknown) {
  const std::string plain(5000, 'q');
  std::string error;
  net::BufferChain out;
  for (int type : {COMPRESS_TYPE_SNAPPY, COMPRESS_TYPE_GZIP, COMPRESS_TYPE_ZLIB}) {
    SCOPED_TRACE(type);
    const std::string good = Compressed(type, plain);
    EXPECT_FALSE(Decompress(type, Chain(good.substr(0, good.size() - 3)), &out, &error));
    EXPECT_FALSE(Decompress(type, Chain(good + "junk"), &out, &error));
    std::string flipped = good;
    flipped[flipped.size() / 2] ^= 0x55;
    flipped[flipped.size() - 1] ^= 0x55;  // gzip/zlib trailer checksum
    EXPECT_FALSE(Decompress(type, Chain(flipped), &out, &error));
    EXPECT_TRUE(out.empty());
  }
  EXPECT_FALSE(Decompress(4, Chain("x"), &out, &error));
  EXPECT_EQ(error, "unsupported compress_type=4");
  EXPECT_FALSE(Compress(99, Chain("x"), &out, &error));
  EXPECT_EQ(error, "unsupported compress_type=99");
}

TEST(Compression, ConcatenatedGzipMembers) {
  const std::string two =
      Compressed(COMPRESS_TYPE_GZIP, "abc") + Compressed(COMPRESS_TYPE_GZIP, "def");
  net::BufferChain out;
  std::string error;
  ASSERT_TRUE(Decompress(COMPRESS_TYPE_GZIP, Chain(two), &out, &error)) << error;
  EXPECT_EQ(out.ToString(), "abcdef");
}

TEST(Compression, DecompressionBombIsBounded) {
  const std::string zeros(1 << 20, '\0');
  std::string error;
  for (int type : {COMPRESS_TYPE_SNAPPY, COMPRESS_TYPE_GZIP, COMPRESS_TYPE_ZLIB}) {
    net::BufferChain out;
    EXPECT_FALSE(Decompress(type, Chain(Compressed(type, zeros)), &out, &error, 100000));
    EXPECT_NE(error.find("100000"), std::string::npos) << error;
    EXPECT_TRUE(out.empty());
  }
  net::BufferChain out;
  EXPECT_FALSE(Decompress(COMPRESS_TYPE_NONE, Chain(zeros), &out, &error, 100000));
}

// --- checksum

TEST(Checksum, Crc32cReferenceValues) {
  EXPECT_EQ(Crc32c(std::string_view("123456789")), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string_view("")), 0u);
  const std::string big(100003, 'z');
  EXPECT_EQ(
      Crc32cExtend(Crc32c(std::string_view(big).substr(0, 5)), std::string_view(big).substr(5)),
      Crc32c(big));
  CountingPages pages(256);
  net::BufferChain chain(&pages);
  chain.Append(std::string_view(big).substr(0, 2000));
  EXPECT_EQ(Crc32cExtend(0, chain), Crc32c(std::string_view(big).substr(0, 2000)));
  for (uint32_t v : {0u, 1u, 0xE3069283u, 0xffffffffu}) EXPECT_EQ(UnmaskCrc32c(MaskCrc32c(v)), v);
}

TEST(Checksum, SpecExample) {
  // §3.4: payload 0a 05 68 65 6c 6c 6f -> checksum_value 61 f6 3a 7e
  const net::BufferChain payload = Chain(FromHex("0a 05 68 65 6c 6c 6f"));
  EXPECT_EQ(ToHex(Crc32cChecksumValue(payload)), "61 f6 3a 7e");
  RpcMeta meta;
  std::string error;
  ASSERT_TRUE(SetChecksum(CHECKSUM_TYPE_CRC32C, false, payload, net::BufferChain(), &meta, &error));
  EXPECT_EQ(ToHex(meta.checksum_value()), "61 f6 3a 7e");
  EXPECT_FALSE(meta.has_checksum_with_attachment());
  EXPECT_TRUE(VerifyChecksum(PayloadEncoding::Of(meta), payload, net::BufferChain(), &error));
}

TEST(Checksum, MismatchBadLengthAttachmentAndUnknownType) {
  const net::BufferChain payload = Chain(FromHex("0a 05 68 65 6c 6c 6f"));
  const net::BufferChain attachment = Chain("AB");
  RpcMeta meta;
  std::string error;
  ASSERT_TRUE(SetChecksum(CHECKSUM_TYPE_CRC32C, true, payload, attachment, &meta, &error));
  EXPECT_TRUE(meta.checksum_with_attachment());
  EXPECT_NE(ToHex(meta.checksum_value()), "61 f6 3a 7e");  // covers "AB" too
  EXPECT_TRUE(VerifyChecksum(PayloadEncoding::Of(meta), payload, attachment, &error));
  EXPECT_FALSE(VerifyChecksum(PayloadEncoding::Of(meta), payload, Chain("AC"), &error));
  EXPECT_EQ(error, "crc32c checksum mismatch");
  meta.set_checksum_value("abc");
  EXPECT_FALSE(VerifyChecksum(PayloadEncoding::Of(meta), payload, attachment, &error));
  EXPECT_NE(error.find("3 bytes"), std::string::npos);
  meta.set_checksum_type(7);  // unknown: not verified
  EXPECT_TRUE(VerifyChecksum(PayloadEncoding::Of(meta), payload, attachment, &error));
  EXPECT_FALSE(SetChecksum(7, false, payload, attachment, &meta, &error));
  // type 0 ignores whatever value is there (brpc copies the request's value into replies)
  meta.set_checksum_type(0);
  EXPECT_TRUE(VerifyChecksum(PayloadEncoding::Of(meta), payload, attachment, &error));
}

TEST(Checksum, AnOversizedValueIsNotCopiedAndFailsWithItsSize) {
  const net::BufferChain payload = Chain(FromHex("0a 05 68 65 6c 6c 6f"));
  RpcMeta meta;
  meta.set_checksum_type(CHECKSUM_TYPE_CRC32C);
  meta.set_checksum_value(std::string(1 << 20, 'v'));  // what a hostile peer may send
  const PayloadEncoding encoding = PayloadEncoding::Of(meta);
  EXPECT_TRUE(encoding.checksum_value().empty());  // a call holds no copy of it
  EXPECT_EQ(size_t{1} << 20, encoding.checksum_value_size);
  std::string error;
  EXPECT_FALSE(VerifyChecksum(encoding, payload, net::BufferChain(), &error));
  EXPECT_EQ("crc32c checksum_value has 1048576 bytes, expected 4", error);
}

// --- payload

TEST(Payload, RoundTripEveryCodecWithChecksum) {
  for (int type : {0, 1, 2, 3}) {
    for (size_t n : {0u, 10u, 20000u}) {
      SCOPED_TRACE(std::to_string(type) + "/" + std::to_string(n));
      const RpcMeta message = n == 0 ? RpcMeta() : SampleMessage(n);
      net::BufferChain payload;
      std::string error;
      ASSERT_TRUE(SerializePayload(message, type, &payload, &error)) << error;
      RpcMeta meta;
      meta.set_compress_type(type);
      ASSERT_TRUE(SetChecksum(1, false, payload, net::BufferChain(), &meta, &error));
      RpcMeta parsed;
      ASSERT_TRUE(
          MergePayload(PayloadEncoding::Of(meta), payload, net::BufferChain(), &parsed, &error))
          << error;
      EXPECT_EQ(parsed.SerializeAsString(), message.SerializeAsString());
    }
  }
}

TEST(Payload, MergesInsteadOfClearing) {
  RpcMeta target;
  target.set_attachment_size(77);  // field absent from the payload survives
  target.mutable_request()->set_service_name("old");
  RpcMeta incoming;
  incoming.mutable_request()->set_method_name("M");
  net::BufferChain payload = Chain(incoming.SerializePartialAsString());
  std::string detail;
  ASSERT_TRUE(
      MergePayload(PayloadEncoding::Of(RpcMeta()), payload, net::BufferChain(), &target, &detail))
      << detail;
  EXPECT_EQ(target.attachment_size(), 77);
  EXPECT_EQ(target.request().service_name(), "old");
  EXPECT_EQ(target.request().method_name(), "M");
}

TEST(Payload, ParseFailuresAndTheirText) {
  RpcMeta meta;
  RpcMeta msg;
  std::string detail;
  // Invalid protobuf (spec §5.3 example: 4 bytes that do not parse).
  net::BufferChain bad = Chain(FromHex("0a 05 68 65"));
  EXPECT_FALSE(MergePayload(PayloadEncoding::Of(meta), bad, net::BufferChain(), &msg, &detail));
  EXPECT_EQ(ParseFailureText("request", msg, PayloadEncoding::Of(meta), bad.size()),
            "Fail to parse request=arenarpc.protocol.RpcMeta, ContentType=pb, CompressType=none, "
            "ChecksumType=none, request_size=4");
  // Missing required fields.
  RpcMeta partial;
  partial.mutable_request()->set_service_name("s");
  net::BufferChain missing = Chain(partial.SerializePartialAsString());
  RpcMeta msg2;
  EXPECT_FALSE(
      MergePayload(PayloadEncoding::Of(meta), missing, net::BufferChain(), &msg2, &detail));
  EXPECT_NE(detail.find("request.method_name"), std::string::npos) << detail;
  // Unsupported compression and content types.
  meta.set_compress_type(4);
  EXPECT_FALSE(
      MergePayload(PayloadEncoding::Of(meta), Chain("x"), net::BufferChain(), &msg, &detail));
  meta.set_checksum_type(1);
  EXPECT_EQ(ParseFailureText("response", msg, PayloadEncoding::Of(meta), 1),
            "Fail to parse response=arenarpc.protocol.RpcMeta, ContentType=pb, "
            "CompressType=unknown, ChecksumType=crc32c, response_size=1");
  RpcMeta json;
  json.set_content_type(CONTENT_TYPE_JSON);
  EXPECT_FALSE(
      MergePayload(PayloadEncoding::Of(json), Chain("{}"), net::BufferChain(), &msg, &detail));
  EXPECT_NE(detail.find("content_type=json"), std::string::npos);
  // Checksum mismatch.
  RpcMeta crc;
  crc.set_checksum_type(1);
  crc.set_checksum_value(FromHex("00 00 00 00"));
  EXPECT_FALSE(MergePayload(PayloadEncoding::Of(crc), Chain(FromHex("0a 05 68 65 6c 6c 6f")),
                            net::BufferChain(), &msg, &detail));
  EXPECT_EQ(detail, "crc32c checksum mismatch");
}

TEST(Payload, SerializeRefusesMissingRequiredFieldsAndUnknownCodec) {
  RpcMeta incomplete;
  incomplete.mutable_request()->set_service_name("s");
  net::BufferChain out;
  out.Append("kept");
  std::string error;
  EXPECT_FALSE(SerializePayload(incomplete, 0, &out, &error));
  EXPECT_EQ(error, "Missing required fields in response: request.method_name");
  EXPECT_FALSE(SerializePayload(RpcMeta(), 4, &out, &error, "request"));
  EXPECT_NE(error.find("compress_type=4"), std::string::npos);
  EXPECT_EQ(out.ToString(), "kept");
}

}  // namespace
}  // namespace arenarpc::protocol
