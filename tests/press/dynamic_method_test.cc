// Loading a user's method from its .proto at run time (--proto, --proto_path, --method), and the
// message each bad input gets.
#include "press/dynamic_method.h"

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace arenarpc::press {
namespace {

constexpr std::string_view kShop = R"(syntax = "proto3";
package shop;
import "common/money.proto";
message Order { string id = 1; common.Money total = 2; repeated string items = 3; }
message Receipt { string id = 1; bool accepted = 2; }
service OrderService {
  rpc Place(Order) returns (Receipt);
  rpc Watch(Order) returns (stream Receipt);
}
)";
constexpr std::string_view kMoney = R"(syntax = "proto3";
package common;
message Money { int64 cents = 1; string currency = 2; }
)";

class DynamicMethodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    shop_ = dir_.Write("svc/shop.proto", kShop);
    dir_.Write("deps/common/money.proto", kMoney);
    deps_ = dir_.path() + "/deps";
  }
  std::string LoadError(const std::string& proto, const std::string& proto_path,
                        const std::string& method) {
    std::string error;
    EXPECT_EQ(DynamicMethod::Load(proto, proto_path, method, &error), nullptr);
    return error;
  }

  TempDir dir_;
  std::string shop_, deps_;
};

TEST_F(DynamicMethodTest, LoadsAMethodWithImportsFromProtoPath) {
  std::string error;
  auto method = DynamicMethod::Load(shop_, "/no/such/dir:" + deps_, "shop.OrderService.Place", &error);
  // A missing --proto_path directory is an error of its own:
  EXPECT_EQ(method, nullptr);
  EXPECT_NE(error.find("--proto_path: '/no/such/dir' is not a directory"),
            std::string::npos) << error;

  method = DynamicMethod::Load(shop_, deps_, "shop.OrderService.Place", &error);
  ASSERT_NE(method, nullptr) << error;
  EXPECT_EQ(method->method().full_name(), "shop.OrderService.Place");
  EXPECT_EQ(method->input_prototype().GetDescriptor()->full_name(), "shop.Order");
  EXPECT_EQ(method->output_prototype().GetDescriptor()->full_name(), "shop.Receipt");
  // The slash form of gRPC paths is accepted too.
  EXPECT_NE(DynamicMethod::Load(shop_, deps_, "shop.OrderService/Place", &error), nullptr) << error;
}

TEST_F(DynamicMethodTest, UnknownServiceOrMethodListsWhatExists) {
  std::string error = LoadError(shop_, deps_, "shop.NoService.Place");
  EXPECT_NE(error.find("--method: no service 'shop.NoService'"), std::string::npos) << error;
  EXPECT_NE(error.find("shop.OrderService"), std::string::npos) << error;

  error = LoadError(shop_, deps_, "shop.OrderService.Cancel");
  EXPECT_NE(error.find("--method: service 'shop.OrderService' has no method 'Cancel'"),
            std::string::npos) << error;
  EXPECT_NE(error.find("Place, Watch"), std::string::npos) << error;

  error = LoadError(shop_, deps_, "Place");
  EXPECT_NE(error.find("--method: 'Place' is not pkg.Service.Method"), std::string::npos) << error;

  error = LoadError(shop_, deps_, "shop.OrderService.Watch");
  EXPECT_NE(error.find("streaming"), std::string::npos) << error;
}

TEST_F(DynamicMethodTest, ParseErrorsNameFileAndLine) {
  const std::string broken = dir_.Write("broken.proto",
                                        "syntax = \"proto3\";\n"
                                        "package b;\n"
                                        "message M { string a = 1 }\n");  // line 3: missing ';'
  const std::string error = LoadError(broken, "", "b.S.M");
  EXPECT_NE(error.find("--proto: cannot load"), std::string::npos) << error;
  EXPECT_NE(error.find("broken.proto:3:"), std::string::npos) << error;
}

TEST_F(DynamicMethodTest, MissingImportAndMissingFileAreReported) {
  // Without --proto_path the import cannot be found.
  std::string error = LoadError(shop_, "", "shop.OrderService.Place");
  EXPECT_NE(error.find("common/money.proto"), std::string::npos) << error;
  EXPECT_NE(error.find("--proto: cannot load"), std::string::npos) << error;

  error = LoadError(dir_.path() + "/nope.proto", "", "a.B.C");
  EXPECT_NE(error.find("--proto: cannot read"), std::string::npos) << error;
  error = LoadError("", "", "a.B.C");
  EXPECT_NE(error.find("--proto"), std::string::npos) << error;
}

TEST(ProtoPath, SplitsOnColons) {
  EXPECT_EQ(SplitProtoPath("a:b::c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(SplitProtoPath("").empty());
}

}  // namespace
}  // namespace arenarpc::press
