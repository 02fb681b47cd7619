// The dump format against bytes computed by hand from brpc's rpc_dump layout (brpc itself is not
// packaged for Debian, so its rpc_replay cannot read our files here): the 12-byte header
// "PRPC" | body_size | meta_size (big-endian), then RpcDumpMeta with brpc's field numbers, then
// the request.
#include <gtest/gtest.h>

#include <string>

#include "capture/dump_format.h"
#include "capture/dump_reader.h"

namespace arenarpc::capture {
namespace {

using namespace std::string_literals;

// service_name "S" (field 1), method_name "M" (2), protocol_type 1 = baidu_std (5),
// attachment_size 2 (6); request: the payload 08 01 (field 1 = 1) and the attachment "ab".
const std::string kBrpcRecord =
    "PRPC"s + "\x00\x00\x00\x0e"s + "\x00\x00\x00\x0a"s +   // body 14 = meta 10 + request 4
    "\x0a\x01S" "\x12\x01M" "\x28\x01" "\x30\x02"s +      // RpcDumpMeta
    "\x08\x01" "ab"s;                                      // payload + attachment

RpcDumpMeta BrpcMeta() {
  RpcDumpMeta meta;
  meta.set_service_name("S");
  meta.set_method_name("M");
  meta.set_protocol_type(1);
  meta.set_attachment_size(2);
  return meta;
}

TEST(DumpFormat, WritesBrpcRecordByteForByte) {
  std::string out;
  ASSERT_TRUE(AppendRecord(BrpcMeta(), "\x08\x01" "ab"s, &out));
  EXPECT_EQ(out, kBrpcRecord);
}

TEST(DumpFormat, ReadsBrpcRecord) {
  DumpReader reader(kBrpcRecord);
  DumpRecord record;
  ASSERT_TRUE(reader.Next(&record));
  EXPECT_EQ(record.meta.service_name(), "S");
  EXPECT_EQ(record.meta.method_name(), "M");
  EXPECT_EQ(record.meta.protocol_type(), 1);
  EXPECT_EQ(record.meta.attachment_size(), 2);
  EXPECT_FALSE(record.meta.has_protocol());  // a brpc record: no arenarpc fields
  EXPECT_EQ(record.request, "\x08\x01" "ab"s);
  EXPECT_EQ(record.offset, 0u);
  EXPECT_FALSE(reader.Next(&record));
  EXPECT_TRUE(reader.damages().empty());
}

TEST(DumpFormat, ArenarpcFieldsFollowBrpcsAtTheirNumbers) {
  RpcDumpMeta meta;
  meta.set_service_name("S");
  meta.set_protocol(CAPTURED_GRPC);   // field 100, varint: tag (100 << 3) = 800 = a0 06
  meta.set_path("/p");                // field 102, bytes: tag (102 << 3 | 2) = 818 = b2 06
  std::string out;
  ASSERT_TRUE(AppendRecord(meta, "", &out));
  // meta: 3 + 3 + 5 = 11 bytes, the whole body (no request)
  const std::string expected = "PRPC"s + "\x00\x00\x00\x0b"s + "\x00\x00\x00\x0b"s +
                               "\x0a\x01S" "\xa0\x06\x03" "\xb2\x06\x02/p"s;
  EXPECT_EQ(out, expected);
}

TEST(DumpReader, ReportsDamageByOffsetAndReadsTheRest) {
  std::string file;
  for (int i = 0; i < 3; ++i) {
    RpcDumpMeta meta = BrpcMeta();
    meta.set_method_name("M" + std::to_string(i));
    ASSERT_TRUE(AppendRecord(meta, "request" + std::to_string(i), &file));
  }
  const size_t record_bytes = file.size() / 3;
  std::string damaged = file;
  damaged[record_bytes + 1] = 'X';                       // record 1's magic broken
  damaged += file.substr(0, record_bytes - 3);           // a record cut short at the end
  DumpReader reader(damaged);
  DumpRecord record;
  ASSERT_TRUE(reader.Next(&record));
  EXPECT_EQ(record.meta.method_name(), "M0");
  ASSERT_TRUE(reader.Next(&record));
  EXPECT_EQ(record.meta.method_name(), "M2");
  EXPECT_EQ(record.request, "request2");
  EXPECT_EQ(record.offset, 2 * record_bytes);
  EXPECT_FALSE(reader.Next(&record));
  ASSERT_EQ(reader.damages().size(), 2u);
  EXPECT_EQ(reader.damages()[0].offset, record_bytes);
  EXPECT_EQ(reader.damages()[0].skipped_bytes, record_bytes);
  EXPECT_NE(reader.damages()[0].reason.find("magic"), std::string::npos);
  EXPECT_EQ(reader.damages()[1].offset, 3 * record_bytes);
  EXPECT_NE(reader.damages()[1].reason.find("truncated"), std::string::npos)
      << reader.damages()[1].reason;
}

TEST(DumpReader, InconsistentSizesAreDamage) {
  std::string bad = kBrpcRecord;
  bad[11] = 0x20;  // meta_size 32 > body_size 14
  bad += kBrpcRecord;
  DumpReader reader(bad);
  DumpRecord record;
  ASSERT_TRUE(reader.Next(&record));
  EXPECT_EQ(record.offset, kBrpcRecord.size());
  ASSERT_EQ(reader.damages().size(), 1u);
  EXPECT_EQ(reader.damages()[0].offset, 0u);
  EXPECT_NE(reader.damages()[0].reason.find("meta_size"), std::string::npos);
}

}  // namespace
}  // namespace arenarpc::capture
