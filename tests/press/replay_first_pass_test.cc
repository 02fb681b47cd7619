// --replay_check's first pass: what becomes a record's reference reply, and what does not.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "arenarpc/error_codes.h"
#include "press/press_request.h"
#include "press/replay_set.h"
#include "press/replay_transport.h"
#include "press/response_check.h"

namespace arenarpc::press {
namespace {

// Answers each record's calls from a script, in order (the last answer repeats), inline.
class ScriptedTransport final : public Transport {
 public:
  struct Answer {
    int error_code = 0;
    std::string payload;
  };
  bool Init(const TransportOptions& /*options*/, std::string* /*error*/) override { return true; }
  void Send(const PressRequest& request, DoneCallback done) override {
    std::vector<Answer>& answers = script[request.replay];
    const size_t n = sent[request.replay]++;
    const Answer& answer = answers[std::min(n, answers.size() - 1)];
    CallResult result;
    result.error_code = answer.error_code;
    result.response_payload = answer.payload;
    done(result);
  }
  void Drain() override {}

  std::map<const ReplayCall*, std::vector<Answer>> script;
  std::map<const ReplayCall*, size_t> sent;
};

TEST(ReplayFirstPass, LoadFailuresAreRetriedAloneAndNeverBecomeTheReference) {
  std::vector<ReplayCall> calls(5);
  std::vector<std::shared_ptr<const PressRequest>> requests;
  for (ReplayCall& call : calls) {
    auto request = std::make_shared<PressRequest>();
    request->is_echo = false;
    request->replay = &call;
    requests.push_back(std::move(request));
  }
  ScriptedTransport transport;
  transport.script[&calls[0]] = {{ERPCTIMEDOUT, ""}, {0, "reply-0"}};  // timed out, then served
  transport.script[&calls[1]] = {{0, "reply-1"}};
  transport.script[&calls[2]] = {{EREQUEST, ""}};  // the handler's own answer, every time
  transport.script[&calls[3]] = {{ELIMIT, ""}};    // refused both times
  transport.script[&calls[4]] = {{EFAILEDSOCKET, ""}, {0, "reply-4"}};

  EXPECT_EQ(1u, RecordFirstReplies(transport, requests, calls, 4));

  EXPECT_TRUE(calls[0].has_first_reply);
  EXPECT_EQ("reply-0", calls[0].first_reply);
  EXPECT_EQ(2u, transport.sent[&calls[0]]);
  EXPECT_TRUE(calls[1].has_first_reply);
  EXPECT_EQ("reply-1", calls[1].first_reply);
  EXPECT_EQ(1u, transport.sent[&calls[1]]);
  EXPECT_TRUE(calls[2].has_first_reply);  // a handler's error is what later replies must equal
  EXPECT_EQ("error " + std::to_string(EREQUEST), calls[2].first_reply);
  EXPECT_EQ(1u, transport.sent[&calls[2]]);
  EXPECT_FALSE(calls[3].has_first_reply);  // no reference: its later replies are not checked
  EXPECT_EQ(2u, transport.sent[&calls[3]]);
  EXPECT_TRUE(calls[4].has_first_reply);
  EXPECT_EQ("reply-4", calls[4].first_reply);
}

TEST(ReplayFirstPass, ALaterReplyIsCheckedOnlyAgainstARealReference) {
  ReplayDifferences differences;
  const ResponseCheck check = ResponseCheck::Replay(differences);
  ReplayCall with_reference;
  with_reference.method_name = "pkg.S.M";
  with_reference.first_reply = "reply";
  with_reference.has_first_reply = true;
  ReplayCall without_reference = with_reference;
  without_reference.has_first_reply = false;
  without_reference.first_reply.clear();
  PressRequest request;
  request.is_echo = false;
  CallResult other;
  other.response_payload = "other";
  std::string text;

  request.replay = &without_reference;
  EXPECT_EQ(0, check.Check(request, other, &text));
  request.replay = &with_reference;
  EXPECT_NE(0, check.Check(request, other, &text));
  EXPECT_EQ(1u, differences.by_method().at("pkg.S.M"));
}

TEST(ReplayFirstPass, LoadFailuresAreTheTransientCodes) {
  const std::vector<int> load = {ERPCTIMEDOUT,  ELIMIT, EOVERCROWDED, ELOGOFF,
                                 EFAILEDSOCKET, EEOF,   ECONNREFUSED, ECONNRESET};
  for (const int code : load) EXPECT_TRUE(IsLoadFailure(code)) << code;
  const std::vector<int> handler = {0, EREQUEST, EINTERNAL, ERESPONSE, ENOMETHOD, ERPCAUTH};
  for (const int code : handler) EXPECT_FALSE(IsLoadFailure(code)) << code;
}

}  // namespace
}  // namespace arenarpc::press
