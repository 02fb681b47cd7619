// What --check_response and --verify accept and reject, for binary and JSON responses.
#include "press/response_check.h"

#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "e2e_test.pb.h"
#include "echo/echo_payload.pb.h"
#include "echo/payload_generator.h"
#include "press/press_result.h"
#include "press/request_source.h"

namespace arenarpc::press {
namespace {

const PressRequest kUserRequest = [] {
  PressRequest r;
  r.is_echo = false;
  return r;
}();

TEST(ResponseCheck, OutputTypeAcceptsAValidBinaryResponse) {
  const auto check = ResponseCheck::OutputType(e2e::TestResponse::default_instance());
  e2e::TestResponse response;
  response.set_message("ok");
  response.add_items("i");
  CallResult call;
  call.response_message = &response;
  std::string text;
  EXPECT_EQ(check.Check(kUserRequest, call, &text), 0) << text;
}

TEST(ResponseCheck, OutputTypeRejectsUndeclaredFieldsAtAnyDepth) {
  const auto check = ResponseCheck::OutputType(e2e::TestResponse::default_instance());
  // Field 99 is unknown to TestResponse: the server answers with something else.
  e2e::TestResponse response;
  response.set_message("ok");
  response.GetReflection()->MutableUnknownFields(&response)->AddVarint(99, 1);
  CallResult call;
  call.response_message = &response;
  std::string text;
  EXPECT_EQ(check.Check(kUserRequest, call, &text), kResponseMismatch);
  EXPECT_NE(text.find("<unknown field 99>"), std::string::npos) << text;

  // Nested: a ComplexPayload whose second result's first item has an unknown field.
  example::EchoResponse echo;
  echo.mutable_payload()->add_result();
  auto* item = echo.mutable_payload()->add_result()->add_item();
  item->GetReflection()->MutableUnknownFields(item)->AddLengthDelimited(5, "x");
  EXPECT_EQ(FirstUnknownField(echo), "payload.result[1].item[0].<unknown field 5>");
  echo.mutable_payload()->mutable_result(1)->mutable_item(0)->GetReflection()
      ->MutableUnknownFields(echo.mutable_payload()->mutable_result(1)->mutable_item(0))->Clear();
  EXPECT_EQ(FirstUnknownField(echo), "");
}

TEST(ResponseCheck, OutputTypeChecksJsonBodies) {
  const auto check = ResponseCheck::OutputType(e2e::TestResponse::default_instance());
  std::string text;
  CallResult call;
  call.json_body = true;
  call.response_json = R"({"message":"ok","items":["a"],"log_id":"7"})";
  EXPECT_EQ(check.Check(kUserRequest, call, &text), 0) << text;
  call.response_json = R"({"message":"ok","price":3})";
  EXPECT_EQ(check.Check(kUserRequest, call, &text), kResponseMismatch);
  EXPECT_NE(text.find("not a arenarpc.e2e.TestResponse in JSON"), std::string::npos) << text;
  call.response_json = R"({"items":["a"]})";  // required "message" missing
  EXPECT_EQ(check.Check(kUserRequest, call, &text), kResponseMismatch);
  EXPECT_NE(text.find("missing field message"), std::string::npos) << text;
  call.response_json = "not json";
  EXPECT_EQ(check.Check(kUserRequest, call, &text), kResponseMismatch);
}

TEST(ResponseCheck, NoneAcceptsAnything) {
  CallResult call;
  call.json_body = true;
  call.response_json = "garbage";
  std::string text;
  EXPECT_EQ(ResponseCheck::None().Check(kUserRequest, call, &text), 0);
}

TEST(ResponseCheck, EchoComparesPayloadsInBinaryAndJson) {
  example::PayloadGenerator generator(2, 9);
  PressRequest request;
  DrawRequest(generator, &request, /*with_json=*/true);
  ASSERT_FALSE(request.json.empty());
  const auto check = ResponseCheck::Echo();
  std::string text;

  CallResult binary;
  binary.response_payload = request.echo.payload();
  EXPECT_EQ(check.Check(request, binary, &text), 0);
  const std::string other = request.echo.payload() + "x";
  binary.response_payload = other;
  EXPECT_EQ(check.Check(request, binary, &text), kEchoMismatch);

  // An HTTP echo answers EchoResponse in JSON: the request's JSON is one with the same payload.
  CallResult json;
  json.json_body = true;
  json.response_json = request.json;
  EXPECT_EQ(check.Check(request, json, &text), 0) << text;
  example::EchoResponse changed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(request.json, &changed).ok());
  changed.mutable_payload()->add_result();
  std::string changed_json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(changed, &changed_json).ok());
  json.response_json = changed_json;
  EXPECT_EQ(check.Check(request, json, &text), kEchoMismatch);
  json.response_json = "{";
  EXPECT_EQ(check.Check(request, json, &text), kEchoMismatch);
  EXPECT_NE(text.find("not an EchoResponse"), std::string::npos) << text;
}

}  // namespace
}  // namespace arenarpc::press
