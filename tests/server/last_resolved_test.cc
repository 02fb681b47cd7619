// LastResolved answers as ServiceRegistry::Resolve() does, whichever names came before: a
// different method, a short service name, a miss.
#include <gtest/gtest.h>

#include <string>

#include "arenarpc/error_codes.h"
#include "echo/echo.pb.h"
#include "server/service_registry.h"

namespace arenarpc::server {
namespace {

// The generated services' constructors are protected: the default methods are enough here.
class Echo : public example::EchoService {};
class OptionalEcho : public example::OptionalEchoService {};

class LastResolvedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_EQ(registry_.Add(&echo_, SERVER_DOESNT_OWN_SERVICE, &error), 0) << error;
    ASSERT_EQ(registry_.Add(&optional_echo_, SERVER_DOESNT_OWN_SERVICE, &error), 0) << error;
    echo_entry_ = registry_.FindMethod("arenarpc.example.EchoService.Echo");
    optional_entry_ = registry_.FindMethod("arenarpc.example.OptionalEchoService.Echo");
    ASSERT_NE(echo_entry_, nullptr);
    ASSERT_NE(optional_entry_, nullptr);
  }

  MethodEntry* Resolve(std::string_view service, std::string_view method) {
    code_ = 0;
    text_.clear();
    return last_.Resolve(registry_, service, method, &code_, &text_);
  }

  Echo echo_;
  OptionalEcho optional_echo_;
  ServiceRegistry registry_;
  LastResolved last_;
  MethodEntry* echo_entry_ = nullptr;
  MethodEntry* optional_entry_ = nullptr;
  int code_ = 0;
  std::string text_;
};

TEST_F(LastResolvedTest, SameNamesGiveTheSameEntryAndOtherNamesTheirOwn) {
  EXPECT_EQ(Resolve("arenarpc.example.EchoService", "Echo"), echo_entry_);
  EXPECT_EQ(Resolve("arenarpc.example.EchoService", "Echo"), echo_entry_);
  EXPECT_EQ(Resolve("arenarpc.example.OptionalEchoService", "Echo"), optional_entry_);
  EXPECT_EQ(Resolve("EchoService", "Echo"), echo_entry_);  // the short name
  EXPECT_EQ(Resolve("OptionalEchoService", "Echo"), optional_entry_);
  EXPECT_EQ(code_, 0);
}

TEST_F(LastResolvedTest, MissesAreAnsweredEveryTimeAndLeaveTheLastEntry) {
  ASSERT_EQ(Resolve("arenarpc.example.EchoService", "Echo"), echo_entry_);
  EXPECT_EQ(Resolve("arenarpc.example.EchoService", "Missing"), nullptr);
  EXPECT_EQ(code_, ENOMETHOD);
  EXPECT_NE(text_.find("Missing"), std::string::npos) << text_;
  EXPECT_EQ(Resolve("NoSuchService", "Echo"), nullptr);
  EXPECT_EQ(code_, ENOSERVICE);
  // A prefix of the remembered names is another name.
  EXPECT_EQ(Resolve("arenarpc.example.EchoServic", "Echo"), nullptr);
  EXPECT_EQ(Resolve("arenarpc.example.EchoService", "Ech"), nullptr);
  EXPECT_EQ(Resolve("arenarpc.example.EchoService", "Echo"), echo_entry_);
  EXPECT_EQ(code_, 0);
}

}  // namespace
}  // namespace arenarpc::server
