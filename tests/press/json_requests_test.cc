// --input: JSON lines, one object or an array, converted once into the method's input type; each
// bad input's message names its line. The bytes a call sends equal the generated message's bytes.
#include "press/json_requests.h"

#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "e2e_test.pb.h"
#include "press/dynamic_method.h"
#include "press/request_source.h"
#include "temp_dir.h"

namespace arenarpc::press {
namespace {

using Messages = std::vector<std::unique_ptr<google::protobuf::Message>>;

// The e2e test service's proto, loaded at run time like a user's.
std::unique_ptr<DynamicMethod> LoadTestService() {
  std::string error;
  auto method = DynamicMethod::Load(E2E_TEST_PROTO, "", "arenarpc.e2e.TestService.Echo", &error);
  EXPECT_NE(method, nullptr) << error;
  return method;
}

std::string ParseError(const google::protobuf::Message& prototype, std::string_view input) {
  Messages messages;
  std::string error;
  EXPECT_FALSE(ParseJsonRequests(input, prototype, &messages, &error)) << input;
  return error;
}

TEST(JsonRequests, AcceptsLinesOneObjectAndArrays) {
  auto method = LoadTestService();
  ASSERT_NE(method, nullptr);
  const auto& prototype = method->input_prototype();
  for (const std::string_view input : {
           std::string_view("{\"message\":\"a\"}\n\n{\"message\":\"b\",\"items\":[\"x\",\"y\"]}\n"),
           std::string_view("[ {\"message\":\"a\"},\n  {\"message\":\"b\", \"items\": [\"x\", \"y\"]} ]"),
           std::string_view("{\"message\":\"a\"}{\"message\":\"b\",\"items\":[\"x\",\"y\"]}"),
           // A byte order mark and Windows line ends.
           std::string_view("\xEF\xBB\xBF{\"message\":\"a\"}\r\n{\"message\":\"b\",\"items\":[\"x\",\"y\"]}\r\n"),
       }) {
    Messages messages;
    std::string error;
    ASSERT_TRUE(ParseJsonRequests(input, prototype, &messages, &error)) << error << "\n" << input;
    ASSERT_EQ(messages.size(), 2u) << input;
    e2e::TestRequest second;
    ASSERT_TRUE(second.ParseFromString(messages[1]->SerializeAsString()));
    EXPECT_EQ(second.message(), "b");
    EXPECT_EQ(second.items_size(), 2);
  }
  // One object spread over lines, with braces inside strings.
  Messages messages;
  std::string error;
  ASSERT_TRUE(ParseJsonRequests("{\n  \"message\": \"}{ \\\" ]\",\n  \"delay_ms\": 0\n}\n", prototype,
                                &messages, &error)) << error;
  ASSERT_EQ(messages.size(), 1u);
  e2e::TestRequest only;
  ASSERT_TRUE(only.ParseFromString(messages[0]->SerializeAsString()));
  EXPECT_EQ(only.message(), "}{ \" ]");
}

TEST(JsonRequests, EachBadInputNamesItsLine) {
  auto method = LoadTestService();
  ASSERT_NE(method, nullptr);
  const auto& prototype = method->input_prototype();
  EXPECT_EQ(ParseError(prototype, ""), "no request (the input is empty)");
  EXPECT_EQ(ParseError(prototype, "  \n\n"), "no request (the input is empty)");
  EXPECT_NE(ParseError(prototype, "[]").find("the array holds no request"), std::string::npos);
  // Line 3 is not JSON protobuf accepts.
  std::string error = ParseError(prototype, "{\"message\":\"a\"}\n{\"message\":\"b\"}\n{\"message\": nope}\n");
  EXPECT_NE(error.find("line 3: not a arenarpc.e2e.TestRequest"), std::string::npos) << error;
  // An unknown field is an error, not a silent default.
  error = ParseError(prototype, "{\"message\":\"a\"}\n{\"message\":\"a\",\"itemz\":[]}\n");
  EXPECT_NE(error.find("line 2:"), std::string::npos) << error;
  EXPECT_NE(error.find("itemz"), std::string::npos) << error;
  // proto2 required fields.
  error = ParseError(prototype, "{\"items\":[\"x\"]}\n");
  EXPECT_NE(error.find("line 1: not a arenarpc.e2e.TestRequest"), std::string::npos) << error;
  EXPECT_NE(error.find("missing field message"), std::string::npos) << error;
  error = ParseError(prototype, "{\"message\":\"a\"}\n\n{\"message\":\"b\"\n");
  EXPECT_NE(error.find("line 3: the JSON object starting here is not closed"), std::string::npos)
      << error;
  error = ParseError(prototype, "{\"message\":\"a\"}\nhello\n");
  EXPECT_NE(error.find("line 2: expected a JSON object"), std::string::npos) << error;
  error = ParseError(prototype, "[{\"message\":\"a\"}\n");
  EXPECT_NE(error.find("not closed with ']'"), std::string::npos) << error;
  error = ParseError(prototype, "[{\"message\":\"a\"}] {}");
  EXPECT_NE(error.find("after the array"), std::string::npos) << error;
}

TEST(JsonRequests, LoadNamesTheFlagAndFile) {
  auto method = LoadTestService();
  ASSERT_NE(method, nullptr);
  TempDir dir;
  Messages messages;
  std::string error;
  EXPECT_FALSE(LoadJsonRequests(dir.path() + "/missing.json", method->input_prototype(), &messages,
                                &error));
  EXPECT_NE(error.find("--input: cannot read"), std::string::npos) << error;
  const std::string path = dir.Write("bad.json", "{\"message\":\"a\"}\n{\"message\":1,}\n");
  EXPECT_FALSE(LoadJsonRequests(path, method->input_prototype(), &messages, &error));
  EXPECT_NE(error.find("--input: " + path + ": line 2:"), std::string::npos) << error;
}

TEST(JsonRequests, SentBytesEqualTheGeneratedMessagesBytes) {
  auto method = LoadTestService();
  ASSERT_NE(method, nullptr);
  const std::string json =
      R"({"message":"héllo","items":["a","","c"],"delay_ms":-3,"async":true,"fail_text":"x",)"
      R"("response_bytes":70000})";
  Messages messages;
  std::string error;
  ASSERT_TRUE(ParseJsonRequests(json, method->input_prototype(), &messages, &error)) << error;

  e2e::TestRequest generated;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &generated).ok());
  const std::string expected = generated.SerializeAsString();
  EXPECT_EQ(messages[0]->SerializeAsString(), expected);

  // What a binary transport sends: the opaque message, serialized per call.
  const auto request = MakeUserRequest(*messages[0], /*with_json=*/true);
  EXPECT_FALSE(request->is_echo);
  EXPECT_EQ(request->binary().SerializeAsString(), expected);
  EXPECT_EQ(request->binary().ByteSizeLong(), expected.size());
  // The HTTP body is JSON of the same message.
  e2e::TestRequest from_json;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(request->json, &from_json).ok())
      << request->json;
  EXPECT_EQ(from_json.SerializeAsString(), expected);
}

TEST(RequestSource, CyclesUserRequestsInOrder) {
  auto method = LoadTestService();
  ASSERT_NE(method, nullptr);
  Messages messages;
  std::string error;
  ASSERT_TRUE(ParseJsonRequests("{\"message\":\"a\"}\n{\"message\":\"bb\"}\n{\"message\":\"ccc\"}",
                                method->input_prototype(), &messages, &error));
  std::vector<std::shared_ptr<const PressRequest>> requests;
  for (const auto& m : messages) requests.push_back(MakeUserRequest(*m, false));
  RequestSource source(std::move(requests));
  EXPECT_EQ(source.ring_size(), 3u);
  std::string order;
  for (int i = 0; i < 7; ++i) {
    e2e::TestRequest r;
    ASSERT_TRUE(r.ParseFromString(source.Next()->binary().SerializeAsString()));
    order += r.message() + ",";
  }
  EXPECT_EQ(order, "a,bb,ccc,a,bb,ccc,a,");
  EXPECT_NEAR(source.mean_request_bytes(), (3 + 4 + 5) / 3.0, 1e-9);
}

}  // namespace
}  // namespace arenarpc::press
