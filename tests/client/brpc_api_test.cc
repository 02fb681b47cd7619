// brpc-shaped API pieces that need no network: ClosureGuard, NewCallback, SetFailed(code, fmt),
// IOBuf-style attachment calls, client-side call ids.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "arenarpc/controller.h"

namespace arenarpc::testing {
namespace {

// Counts its runs; not self-deleting.
struct CountingClosure : google::protobuf::Closure {
  int runs = 0;
  void Run() override { ++runs; }
};

TEST(ClosureGuard, RunsAtScopeExit) {
  CountingClosure done;
  {
    ClosureGuard guard(&done);
    EXPECT_FALSE(guard.empty());
    EXPECT_EQ(done.runs, 0);
  }
  EXPECT_EQ(done.runs, 1);
}

TEST(ClosureGuard, ReleaseHandsTheClosureBack) {
  CountingClosure done;
  google::protobuf::Closure* released = nullptr;
  {
    ClosureGuard guard(&done);
    released = guard.release();
    EXPECT_TRUE(guard.empty());
  }
  EXPECT_EQ(released, &done);
  EXPECT_EQ(done.runs, 0);
}

TEST(ClosureGuard, ResetRunsThePreviousClosure) {
  CountingClosure first, second;
  {
    ClosureGuard guard(&first);
    guard.reset(&second);
    EXPECT_EQ(first.runs, 1);
    EXPECT_EQ(second.runs, 0);
    guard.reset(&second);  // the same closure again: not run twice
    EXPECT_EQ(second.runs, 0);
  }
  EXPECT_EQ(second.runs, 1);
  ClosureGuard empty;
  EXPECT_TRUE(empty.empty());
}

TEST(ClosureGuard, SwapExchangesClosures) {
  CountingClosure a;
  {
    ClosureGuard with(&a), without;
    with.swap(without);
    EXPECT_TRUE(with.empty());
    EXPECT_FALSE(without.empty());
  }
  EXPECT_EQ(a.runs, 1);
}

std::string g_seen;
void Record3(int a, const std::string& b, double* c) {
  g_seen = std::to_string(a) + b + std::to_string(*c);
}
void Record4(int a, int b, int c, std::string d) {
  g_seen = std::to_string(a + b + c) + d;
}

struct Target {
  std::string seen;
  void Three(int a, std::string b, char c) { seen = std::to_string(a) + b + c; }
  void Four(int a, int b, int c, int d) { seen = std::to_string(a * 1000 + b * 100 + c * 10 + d); }
  void Count() const { ++*counter; }
  int* counter;
};

TEST(NewCallback, BindsThreeAndFourArgumentsOfFreeFunctions) {
  double value = 2.5;
  google::protobuf::Closure* three = NewCallback(&Record3, 7, std::string("x"), &value);
  value = 3.5;  // bound by pointer: read when the closure runs
  three->Run();  // deletes itself (ASan reports a leak otherwise)
  EXPECT_EQ(g_seen, "7x3.500000");
  google::protobuf::Closure* four = NewCallback(&Record4, 1, 2, 3, "abc");
  four->Run();
  EXPECT_EQ(g_seen, "6abc");
}

TEST(NewCallback, BindsMemberFunctions) {
  Target target;
  NewCallback(&target, &Target::Three, 5, "yz", '!')->Run();
  EXPECT_EQ(target.seen, "5yz!");
  NewCallback(&target, &Target::Four, 1, 2, 3, 4)->Run();
  EXPECT_EQ(target.seen, "1234");
  int count = 0;
  const Target counter{{}, &count};
  NewCallback(&counter, &Target::Count)->Run();  // const member function, no arguments
  EXPECT_EQ(count, 1);
}

TEST(NewCallback, ProtobufShapesStillResolve) {
  // Two arguments and an unqualified call: protobuf's overload and ours must not be ambiguous.
  using namespace arenarpc;  // NOLINT: what ported code does
  Controller cntl;
  std::string out;
  google::protobuf::Closure* done = NewCallback(
      +[](Controller* c, std::string* o) { *o = c->Failed() ? "failed" : "ok"; }, &cntl, &out);
  done->Run();
  EXPECT_EQ(out, "ok");
}

TEST(NewPermanentCallback, RunsManyTimesAndIsOwnedByTheCaller) {
  Target target;
  int count = 0;
  target.counter = &count;
  std::unique_ptr<google::protobuf::Closure> closure(
      NewPermanentCallback(&target, &Target::Count));
  closure->Run();
  closure->Run();
  EXPECT_EQ(count, 2);
  std::unique_ptr<google::protobuf::Closure> free_closure(
      NewPermanentCallback(&Record4, 0, 0, 1, "p"));
  free_closure->Run();
  free_closure->Run();
  EXPECT_EQ(g_seen, "1p");
}

TEST(ControllerSetFailed, FormatsPrintfStyle) {
  Controller cntl;
  cntl.SetFailed(EINVAL, "bad %s #%d (%.1f%%)", "field", 3, 99.5);
  EXPECT_EQ(cntl.ErrorCode(), EINVAL);
  EXPECT_EQ(cntl.ErrorText(), "bad field #3 (99.5%)");
  const std::string long_text(5000, 'z');
  cntl.SetFailed(EREQUEST, "%s", long_text.c_str());  // longer than any stack buffer
  EXPECT_EQ(cntl.ErrorCode(), EREQUEST);
  EXPECT_EQ(cntl.ErrorText(), "bad field #3 (99.5%) " + long_text);
}

TEST(ControllerSetFailed, StringFormStillWorks) {
  Controller cntl;
  const std::string reason = "100% literal, no format";
  cntl.SetFailed(ELIMIT, reason);
  EXPECT_EQ(cntl.ErrorText(), reason);
  cntl.Reset();
  cntl.SetFailed(0, std::string("zero becomes -1"));
  EXPECT_EQ(cntl.ErrorCode(), -1);
}

TEST(Attachment, IOBufStyleCalls) {
  Controller cntl;
  cntl.request_attachment().append("hello");
  cntl.request_attachment().append(std::string(" "));
  cntl.request_attachment().append("world!!", 5);
  EXPECT_EQ(cntl.request_attachment().to_string(), "hello world");
  EXPECT_EQ(cntl.request_attachment().length(), 11u);
  IOBuf& response = cntl.response_attachment();
  response.append(cntl.request_attachment());  // shares, the request side keeps its bytes
  EXPECT_EQ(response.to_string(), "hello world");
  EXPECT_EQ(cntl.request_attachment().size(), 11u);
  std::string part;
  EXPECT_EQ(response.copy_to(&part, 5, 6), 5u);
  EXPECT_EQ(part, "world");
  std::ostringstream os;
  os << response;
  EXPECT_EQ(os.str(), "hello world");
}

TEST(ControllerCompressType, BrpcNames) {
  Controller cntl;
  cntl.set_request_compress_type(COMPRESS_TYPE_SNAPPY);
  cntl.set_response_compress_type(COMPRESS_TYPE_GZIP);
  EXPECT_EQ(cntl.request_compress_type(), CompressType::kSnappy);
  EXPECT_EQ(cntl.response_compress_type(), CompressType::kGzip);
  EXPECT_EQ(static_cast<int>(COMPRESS_TYPE_ZLIB), 3);  // the wire value brpc uses
}

TEST(ControllerCallId, StableUntilReset) {
  Controller cntl;
  const CallId id = cntl.call_id();
  EXPECT_NE(id.value, 0u);
  EXPECT_EQ(cntl.call_id().value, id.value);
  Controller other;
  EXPECT_NE(other.call_id().value, id.value);
  cntl.Reset();
  EXPECT_NE(cntl.call_id().value, id.value);
  // No call with these ids is in flight: both return at once.
  Join(id);
  StartCancel(id);
  EXPECT_FALSE(cntl.IsCanceled());  // client controllers are never canceled server-side
  CountingClosure notified;
  cntl.NotifyOnCancel(&notified);
  EXPECT_EQ(notified.runs, 1);
}

}  // namespace
}  // namespace arenarpc::testing
