#pragma once
// PkiServerTest: a ServerTest whose suite shares a temp directory of make_test_pki.sh's
// certificates (ca, server, client, expired, stranger...; see the script), removed after the suite.
// Needs ARENARPC_TEST_PKI_SCRIPT (the script's path) defined by the test target.

#include <cstdlib>
#include <filesystem>
#include <string>

#include "server_fixture.h"

namespace arenarpc::e2e {

class PkiServerTest : public ServerTest {
 protected:
  static void SetUpTestSuite() {
    char pattern[] = "/tmp/arenarpc-pki-XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(pattern));
    dir_ = pattern;
    const std::string command = "bash " ARENARPC_TEST_PKI_SCRIPT " " + dir_ + " >/dev/null";
    ASSERT_EQ(0, std::system(command.c_str()));
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  static std::string File(const std::string& name) { return dir_ + "/" + name; }

  static inline std::string dir_;
};

}  // namespace arenarpc::e2e
