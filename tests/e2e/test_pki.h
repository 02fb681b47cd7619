#pragma once
// PkiServerTest: a ServerTest whose suite shares a temp directory of make_test_pki.sh's
// certificates (ca, server, client, expired, stranger...; see the script), made by the first
// File() call (tests that need none do not pay for it) and removed after the suite.
// Needs ARENARPC_TEST_PKI_SCRIPT (the script's path) defined by the test target.

#include <cstdlib>
#include <filesystem>
#include <string>

#include "server_fixture.h"

namespace arenarpc::e2e {

class PkiServerTest : public ServerTest {
 protected:
  static void TearDownTestSuite() {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
    dir_.clear();
  }
  static std::string File(const std::string& name) {
    if (dir_.empty()) {
      char pattern[] = "/tmp/arenarpc-pki-XXXXXX";
      if (mkdtemp(pattern) == nullptr) ADD_FAILURE() << "mkdtemp failed";
      dir_ = pattern;
      const std::string command = "bash " ARENARPC_TEST_PKI_SCRIPT " " + dir_ + " >/dev/null";
      if (std::system(command.c_str()) != 0) ADD_FAILURE() << "make_test_pki.sh failed";
    }
    return dir_ + "/" + name;
  }

  static inline std::string dir_;
};

}  // namespace arenarpc::e2e
