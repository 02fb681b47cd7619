#include "press/press_options.h"

#include <gtest/gtest.h>

namespace arenarpc::press {
namespace {

PressOptions Valid() {
  PressOptions o;
  o.qps = 100;
  return o;
}

TEST(PressOptions, DefaultsWithARateAreValid) { EXPECT_EQ(Validate(Valid()), ""); }

TEST(PressOptions, NeedsExactlyOneLoadShape) {
  PressOptions o = Valid();
  o.concurrency = 4;
  EXPECT_NE(Validate(o).find("exactly one of --qps"), std::string::npos);
  o.qps = 0;
  EXPECT_EQ(Validate(o), "");
  o.concurrency = 0;
  EXPECT_NE(Validate(o), "");
}

TEST(PressOptions, RejectsBadFieldsWithTheFlagName) {
  auto error_of = [](auto mutate) {
    PressOptions o = Valid();
    mutate(o);
    return Validate(o);
  };
  EXPECT_NE(error_of([](PressOptions& o) { o.server = "localhost"; }).find("host:port"),
            std::string::npos);
  EXPECT_NE(error_of([](PressOptions& o) { o.server = "h:70000"; }).find("invalid port"),
            std::string::npos);
  EXPECT_NE(error_of([](PressOptions& o) { o.server = "h:12x"; }).find("invalid port"),
            std::string::npos);
  EXPECT_NE(error_of([](PressOptions& o) { o.payload_scale = 0; }).find("--payload_scale"),
            std::string::npos);
  EXPECT_NE(error_of([](PressOptions& o) { o.duration_s = 0; }).find("--duration_s"),
            std::string::npos);
  EXPECT_NE(error_of([](PressOptions& o) { o.warmup_s = -1; }).find("--warmup_s"),
            std::string::npos);
  EXPECT_NE(error_of([](PressOptions& o) { o.qps = -5; }).find("exactly one"), std::string::npos);
  EXPECT_NE(error_of([](PressOptions& o) { o.threads = 0; }).find("--threads"), std::string::npos);
  EXPECT_NE(error_of([](PressOptions& o) { o.connections = -1; }).find("--connections"),
            std::string::npos);
  EXPECT_NE(error_of([](PressOptions& o) { o.ring = -1; }).find("--ring"), std::string::npos);
  EXPECT_NE(error_of([](PressOptions& o) { o.connection_type = "udp"; }).find("connection_type"),
            std::string::npos);
  EXPECT_EQ(error_of([](PressOptions& o) { o.server = "[::1]:8000"; }), "");
}

TEST(PressOptions, AUserMethodNeedsProtoMethodAndInput) {
  PressOptions o = Valid();
  o.proto = "shop.proto";
  o.method = "shop.OrderService.Place";
  o.input = "orders.jsonl";
  o.check_response = true;
  o.proto_path = "protos";
  EXPECT_EQ(Validate(o), "");
  o.input.clear();
  EXPECT_NE(Validate(o).find("--input is missing"), std::string::npos) << Validate(o);
  o.input = "orders.jsonl";
  o.proto.clear();
  EXPECT_NE(Validate(o).find("--proto is missing"), std::string::npos) << Validate(o);
  o.proto = "shop.proto";
  o.method.clear();
  EXPECT_NE(Validate(o).find("--method is missing"), std::string::npos) << Validate(o);

  PressOptions echo = Valid();
  echo.check_response = true;
  EXPECT_NE(Validate(echo).find("--check_response needs --method"), std::string::npos);
  echo.check_response = false;
  echo.proto_path = "protos";
  EXPECT_NE(Validate(echo).find("--proto_path needs --proto"), std::string::npos);
}

}  // namespace
}  // namespace arenarpc::press
