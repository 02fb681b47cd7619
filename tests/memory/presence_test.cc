// Presence of singular sub-messages with the reuse strategy: a request reads has_x() as its wire
// bytes say (also for a present but empty sub-message), a response reads and serializes as a
// fresh heap message whatever the handler does, and `optional` sub-messages are kept exactly.
#include <gtest/gtest.h>

#include <string>

#include "pooled_reuse_options.h"
#include "arenarpc/memory/message_memory.h"
#include "memory_test.pb.h"

namespace arenarpc::memory {
namespace {

using memtest::Mid;
using memtest::Root;

// Parses `wire` into a pair of `method` and checks the request equals heap's parse of it.
void ExpectParsedLikeHeap(MethodMemory& method, const Root& sent) {
  const std::string wire = sent.SerializeAsString();
  MessagePair pair = method.Acquire();
  SerializedSpan bytes(wire);
  ASSERT_EQ(pair.ParseRequest(bytes), ParseResult::kOk);
  const auto& request = static_cast<const Root&>(*pair.request());
  Root heap;
  ASSERT_TRUE(heap.ParseFromString(wire));
  EXPECT_EQ(request.has_mid(), heap.has_mid());
  EXPECT_EQ(request.has_leaf(), heap.has_leaf());
  EXPECT_EQ(request.mid().has_leaf(), heap.mid().has_leaf());
  EXPECT_EQ(request.SerializeAsString(), wire);
}

TEST(ReusePresence, RequestsReadPresenceFromTheirBytes) {
  auto memory = MakeMessageMemory("reuse", PooledReuseOptions(), nullptr);
  auto method = memory->Bind(Root::default_instance(), Root::default_instance());
  Root full;  // leaves mid, mid.leaf and leaf kept in the pooled object
  full.mutable_mid()->mutable_leaf()->set_n(1);
  full.mutable_leaf()->set_s("x");
  ExpectParsedLikeHeap(*method, full);

  Root empty_leaf;  // leaf present with no content (2 bytes on the wire), mid absent
  empty_leaf.mutable_leaf();
  ExpectParsedLikeHeap(*method, empty_leaf);

  Root empty_deep;  // mid present, holding an empty leaf
  empty_deep.mutable_mid()->mutable_leaf();
  ExpectParsedLikeHeap(*method, empty_deep);

  ExpectParsedLikeHeap(*method, Root());  // nothing present
  ExpectParsedLikeHeap(*method, full);
  EXPECT_GE(memory->stats().reuses, 4u);
}

TEST(ReusePresence, SubMessagesTheHandlerCreatesStayPresentWhenEmpty) {
  auto memory = MakeMessageMemory("reuse", PooledReuseOptions(), nullptr);
  auto method = memory->Bind(Root::default_instance(), Root::default_instance());
  const std::string no_request;
  // 0: content in mid (kept by the pooled response); 1: a new, empty leaf (never kept before):
  // present, as with heap; 2: nothing written: the kept mid and leaf are not sent.
  for (int call = 0; call < 3; ++call) {
    MessagePair pair = method->Acquire();
    SerializedSpan bytes(no_request);
    ASSERT_EQ(pair.ParseRequest(bytes), ParseResult::kOk);
    auto& response = static_cast<Root&>(*pair.response());
    Root heap;
    if (call == 0) {
      response.mutable_mid()->mutable_leaf()->set_n(2);
      heap.mutable_mid()->mutable_leaf()->set_n(2);
    } else if (call == 1) {
      response.mutable_leaf();
      heap.mutable_leaf();
    }
    pair.PrepareResponse();
    EXPECT_EQ(response.SerializeAsString(), heap.SerializeAsString()) << "call " << call;
  }
}

// A response's `optional` sub-message keeps its object (and its repeated elements) from call to
// call through its has-bit: presence stays exact and the handler's writes allocate nothing new.
TEST(ReusePresence, OptionalSubMessagesOfResponsesAreKeptExactly) {
  MemoryOptions options = PooledReuseOptions();
  options.reuse.max_pooled_objects = 1;  // the same response object every call
  auto memory = MakeMessageMemory("reuse", options, nullptr);
  // Another request type: request and response objects do not share (and swap through) one pool.
  auto method = memory->Bind(Mid::default_instance(), Root::default_instance());
  const std::string no_request;
  const void* mid = nullptr;
  const void* first_leaf = nullptr;
  for (int call = 0; call < 4; ++call) {
    MessagePair pair = method->Acquire();
    SerializedSpan bytes(no_request);
    ASSERT_EQ(pair.ParseRequest(bytes), ParseResult::kOk);
    auto& response = static_cast<Root&>(*pair.response());
    EXPECT_FALSE(response.has_opt_mid()) << "call " << call;
    Root heap;
    if (call != 2) {  // call 2 leaves it out; call 3 touches it and leaves it empty
      Mid* written = response.mutable_opt_mid();
      heap.mutable_opt_mid();
      if (call < 2) {
        written->add_leaves()->set_n(call);
        heap.mutable_opt_mid()->add_leaves()->set_n(call);
        if (call == 0) {
          mid = written;
          first_leaf = &written->leaves(0);
        } else {
          EXPECT_EQ(written, mid) << "the kept object";
          EXPECT_EQ(&written->leaves(0), first_leaf) << "its kept element";
        }
      }
    }
    pair.PrepareResponse();
    EXPECT_EQ(response.SerializeAsString(), heap.SerializeAsString()) << "call " << call;
  }
}

}  // namespace
}  // namespace arenarpc::memory
