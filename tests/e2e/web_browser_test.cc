// A real browser calls the service from another origin: headless Chromium loads
// web_browser_page.html from a second HTTP server (python3 -m http.server on another port), whose
// script calls Echo with fetch() — Connect JSON (preflighted: CORS) and grpc-web-text — and
// writes the replies into the DOM (--dump-dom). The page's origin is in cors_allowed_origins;
// the same page from an origin that is not (localhost instead of 127.0.0.1) is refused by the
// browser. Off with cmake -DARENARPC_BROWSER_TESTS=OFF.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "../free_port.h"
#include "chromium_dom.h"
#include "server_fixture.h"

namespace arenarpc::e2e {
namespace {

// python3's http.server on 127.0.0.1:port serving `directory`, stopped (SIGTERM to that one
// process) when this goes.
class PageServer {
 public:
  PageServer(int port, const std::string& directory) {
    pid_ = ::fork();
    if (pid_ == 0) {
      const int null = ::open("/dev/null", O_WRONLY);  // its request log is noise here
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
      const std::string port_text = std::to_string(port);
      ::execl("/usr/bin/python3", "python3", "-m", "http.server", port_text.c_str(), "--bind",
              "127.0.0.1", "--directory", directory.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 500 && pid_ > 0 && testing::PortIsFree(port); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~PageServer() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  PageServer(const PageServer&) = delete;
  PageServer& operator=(const PageServer&) = delete;

 private:
  pid_t pid_ = -1;
};

std::string TextOf(const std::string& dom, const std::string& id) {
  const std::string open = "<div id=\"" + id + "\">";
  const size_t at = dom.find(open);
  if (at == std::string::npos) return "(no #" + id + ")";
  const size_t from = at + open.size();
  return dom.substr(from, dom.find("</div>", from) - from);
}

using WebBrowserTest = ServerTest;

TEST_P(WebBrowserTest, ChromiumCallsFromAnotherOrigin) {
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/chromium"))
      << "ARENARPC_BROWSER_TESTS needs /usr/bin/chromium (Debian: chromium)";
  const int page_port = testing::FreePort();
  ASSERT_GT(page_port, 0);
  ServerOptions options;
  options.cors_allowed_origins = {"http://127.0.0.1:" + std::to_string(page_port)};
  StartServer(options);
  PageServer pages(page_port, ARENARPC_SOURCE_DIR "/tests/e2e");
  ASSERT_FALSE(testing::PortIsFree(page_port)) << "python3 -m http.server did not start";
  const auto dir = std::filesystem::temp_directory_path() /
                   ("arenarpc_web_browser_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string page = ":" + std::to_string(page_port) +
                           "/web_browser_page.html?server=http://127.0.0.1:" +
                           std::to_string(port_);
  // Scripts wait on fetch(): the virtual time budget lets them finish before the DOM is dumped.
  const std::string flags = "--virtual-time-budget=15000";
  const std::string dom = DumpDom(dir, "http://127.0.0.1" + page, flags);
  ASSERT_FALSE(dom.empty()) << "chromium --dump-dom failed";
  EXPECT_EQ("200 from the browser", TextOf(dom, "connect")) << dom;
  EXPECT_EQ("200 grpc-web in the browser | grpc-status:0", TextOf(dom, "grpcweb")) << dom;
  EXPECT_EQ("501 unimplemented", TextOf(dom, "connect-error")) << dom;
  // The same page from http://localhost:<port>: an origin the server does not allow.
  std::filesystem::remove_all(dir / "profile");
  const std::string refused = DumpDom(dir, "http://localhost" + page, flags);
  EXPECT_EQ(0u, TextOf(refused, "connect").find("refused: TypeError")) << refused;
  EXPECT_EQ(0u, TextOf(refused, "grpcweb").find("refused: TypeError")) << refused;
  std::filesystem::remove_all(dir);
  const MethodStats stats = server_->GetMethodStats("arenarpc.e2e.TestService.Echo");
  EXPECT_EQ(0u, stats.errors);
  EXPECT_GE(stats.calls, 2u);
  ExpectAllPairsReleased();
}

INSTANTIATE_TEST_SUITE_P(Arena, WebBrowserTest, ::testing::Values("arena"));

}  // namespace
}  // namespace arenarpc::e2e
