#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <string>

#include "arenarpc/buffer_chain.h"
#include "counting_pages.h"
#include "protocol/rpc_meta.pb.h"

namespace arenarpc::net {
namespace {

using testing::CountingPages;

protocol::RpcMeta BigMeta() {
  protocol::RpcMeta meta;
  meta.mutable_request()->set_service_name(std::string(900, 's'));
  meta.mutable_request()->set_method_name("Echo");
  meta.set_correlation_id(-42);
  for (int i = 0; i < 50; ++i) (*meta.mutable_user_fields())["k" + std::to_string(i)] = "v";
  return meta;
}

TEST(BufferChainStreams, SerializeIntoChainThenParseFromIt) {
  CountingPages pages(256);  // forces the message across many blocks
  BufferChain chain(&pages);
  const protocol::RpcMeta meta = BigMeta();
  {
    BufferChainOutputStream out(&chain);
    ASSERT_TRUE(meta.SerializeToZeroCopyStream(&out));
    EXPECT_EQ(out.ByteCount(), static_cast<int64_t>(meta.ByteSizeLong()));
  }
  EXPECT_EQ(chain.size(), meta.ByteSizeLong());
  EXPECT_GT(chain.span_count(), 4u);
  EXPECT_EQ(chain.ToString(), meta.SerializeAsString());

  BufferChainInputStream in(chain);
  protocol::RpcMeta parsed;
  ASSERT_TRUE(parsed.ParseFromZeroCopyStream(&in));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, meta));
  EXPECT_EQ(in.ByteCount(), static_cast<int64_t>(chain.size()));
}

TEST(BufferChainStreams, LimitStopsAtPrefix) {
  BufferChain chain;
  protocol::RpcMeta meta;
  meta.set_correlation_id(7);
  chain.Append(meta.SerializeAsString());
  chain.Append("trailing garbage \xff\xff");
  BufferChainInputStream in(chain, meta.ByteSizeLong());
  protocol::RpcMeta parsed;
  ASSERT_TRUE(parsed.ParseFromZeroCopyStream(&in));
  EXPECT_EQ(parsed.correlation_id(), 7);
  // The limit is clamped to the chain's size.
  BufferChainInputStream all(chain, 1u << 30);
  const void* data;
  int size;
  int64_t total = 0;
  while (all.Next(&data, &size)) total += size;
  EXPECT_EQ(total, static_cast<int64_t>(chain.size()));
}

TEST(BufferChainStreams, BackUpAndSkip) {
  CountingPages pages(256);
  BufferChain chain(&pages);
  std::string data;
  for (int i = 0; i < 1000; ++i) data += static_cast<char>(i % 251);
  chain.Append(data);
  BufferChainInputStream in(chain);
  const void* p;
  int n;
  ASSERT_TRUE(in.Next(&p, &n));
  ASSERT_GT(n, 10);
  in.BackUp(10);
  EXPECT_EQ(in.ByteCount(), n - 10);
  ASSERT_TRUE(in.Next(&p, &n));
  EXPECT_EQ(n, 10);
  EXPECT_EQ(std::string(static_cast<const char*>(p), n), data.substr(in.ByteCount() - 10, 10));
  ASSERT_TRUE(in.Skip(500));
  const int64_t at = in.ByteCount();
  ASSERT_TRUE(in.Next(&p, &n));
  EXPECT_EQ(static_cast<const char*>(p)[0], data[at]);
  EXPECT_FALSE(in.Skip(100000));  // past the end
  EXPECT_EQ(in.ByteCount(), 1000);
  EXPECT_FALSE(in.Next(&p, &n));
}

TEST(BufferChainStreams, OutputBackUpCommitsOnlyWhatWasWritten) {
  CountingPages pages(256);
  BufferChain chain(&pages);
  {
    BufferChainOutputStream out(&chain);
    void* p;
    int n;
    ASSERT_TRUE(out.Next(&p, &n));
    ASSERT_GE(n, 3);
    std::memcpy(p, "abc", 3);
    out.BackUp(n - 3);
    EXPECT_EQ(out.ByteCount(), 3);
    ASSERT_TRUE(out.Next(&p, &n));
    std::memcpy(p, "d", 1);
    out.BackUp(n - 1);
  }
  EXPECT_EQ(chain.ToString(), "abcd");
  {
    BufferChainOutputStream out(&chain);  // destructor commits a whole unreturned buffer
    void* p;
    int n;
    ASSERT_TRUE(out.Next(&p, &n));
    std::memset(p, 'e', n);
    EXPECT_EQ(out.ByteCount(), n);
  }
  EXPECT_EQ(chain.ToString().substr(0, 5), "abcde");
  EXPECT_EQ(chain.size(), 256 - 32u);  // one full page of data bytes
}

}  // namespace
}  // namespace arenarpc::net
