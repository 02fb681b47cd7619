// /status rendered by a real headless Chromium (/usr/bin/chromium, Debian's `chromium`): the DOM
// it renders (--dump-dom) must name the methods served and hold the call and error counts the test
// made, and the screenshot must show a page (not a blank render) of the requested size. With
// ARENARPC_UPDATE_DOCS_IMG=1 in the environment it is also saved as docs/img/status.png.
// Chromium loads the page from the server's own port. Off with cmake -DARENARPC_BROWSER_TESTS=OFF.

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "chromium_dom.h"
#include "http_get.h"
#include "server_fixture.h"

namespace arenarpc::builtin {
namespace {

using e2e::DumpDom;
using e2e::TestRequest;
using e2e::TestResponse;
using e2e::TestService_Stub;

constexpr int kWidth = 1000, kHeight = 1300;

struct Png {
  uint32_t width = 0, height = 0;
  std::string pixels;  // inflated IDAT: per row a filter byte and the row's bytes
};

uint32_t BigEndian32(const std::string& data, size_t at) {
  return (uint32_t(uint8_t(data[at])) << 24) | (uint32_t(uint8_t(data[at + 1])) << 16) |
         (uint32_t(uint8_t(data[at + 2])) << 8) | uint32_t(uint8_t(data[at + 3]));
}

// Reads the PNG's size and inflates its image data; false if it is not a PNG.
bool ReadPng(const std::filesystem::path& path, Png* png) {
  std::ifstream in(path, std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < 33 || data.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return false;
  std::string compressed;
  for (size_t at = 8; at + 8 <= data.size();) {
    const uint32_t length = BigEndian32(data, at);
    const std::string type = data.substr(at + 4, 4);
    if (at + 12 + length > data.size()) return false;
    if (type == "IHDR") {
      png->width = BigEndian32(data, at + 8);
      png->height = BigEndian32(data, at + 12);
    } else if (type == "IDAT") {
      compressed.append(data, at + 8, length);
    }
    at += 12 + length;
  }
  uLongf size = static_cast<uLongf>(png->height) * (png->width * 4 + 1);
  png->pixels.resize(size);
  if (uncompress(reinterpret_cast<Bytef*>(png->pixels.data()), &size,
                 reinterpret_cast<const Bytef*>(compressed.data()), compressed.size()) != Z_OK) {
    return false;
  }
  png->pixels.resize(size);
  return true;
}

size_t DistinctBytes(const std::string& data) {
  std::set<unsigned char> seen(data.begin(), data.end());
  return seen.size();
}

// Runs Chromium on `url` (bounded by `timeout`); true if it wrote the screenshot.
bool Screenshot(const std::filesystem::path& dir, const std::string& url,
                const std::filesystem::path& png) {
  const std::string command =
      "timeout 90 /usr/bin/chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "
      "--no-first-run --disable-extensions --user-data-dir='" + (dir / "profile").string() +
      "' --window-size=" + std::to_string(kWidth) + "," + std::to_string(kHeight) +
      " --screenshot='" + png.string() + "' '" + url + "' > '" + (dir / "chromium.log").string() +
      "' 2>&1";
  return std::system(command.c_str()) == 0 && std::filesystem::exists(png);
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

using StatusScreenshotTest = e2e::ServerTest;

TEST_P(StatusScreenshotTest, ChromiumRendersTheStatusPage) {
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/chromium"))
      << "ARENARPC_BROWSER_TESTS needs /usr/bin/chromium (Debian: chromium)";
  StartServer();
  // Three seconds of calls, a few failing, so that the tables and the sparkline have content.
  auto channel = MakeChannel();
  TestService_Stub stub(channel.get());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  uint64_t calls = 0, failed_2001 = 0, failed_1003 = 0;
  for (int i = 0; std::chrono::steady_clock::now() < until; ++i) {
    Controller controller;
    TestRequest request;
    request.set_message(std::string(64, 'm'));
    if (i % 17 == 0) request.set_fail_code(i % 34 == 0 ? 2001 : 1003);
    TestResponse response;
    stub.Echo(&controller, &request, &response, nullptr);
    ++calls;
    if (controller.Failed()) ++(controller.ErrorCode() == 2001 ? failed_2001 : failed_1003);
    std::this_thread::sleep_for(std::chrono::milliseconds(i % 100 < 50 ? 5 : 15));
  }
  ASSERT_GT(failed_2001, 0u);
  ASSERT_GT(failed_1003, 0u);
  // The server counts a call after its reply is out: wait until it has counted them all.
  const std::string echo = "arenarpc.e2e.TestService.Echo";
  for (int i = 0; i < 500 && server_->GetMethodStats(echo).calls < calls; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(calls, server_->GetMethodStats(echo).calls);

  const auto dir = std::filesystem::temp_directory_path() /
                   ("arenarpc_chromium_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string dom =
      DumpDom(dir, "http://127.0.0.1:" + std::to_string(port_) + "/status");
  ASSERT_FALSE(dom.empty()) << "chromium --dump-dom failed";
  EXPECT_TRUE(Contains(dom, "<h2>" + echo + "</h2>")) << dom;
  EXPECT_TRUE(Contains(dom, "<h2>arenarpc.e2e.TestService.Echo2</h2>")) << dom;  // no calls yet
  EXPECT_TRUE(Contains(dom, "<tr><th>calls</th><td>" + std::to_string(calls) + "</td></tr>"))
      << "calls " << calls << "\n" << dom;
  EXPECT_TRUE(Contains(dom, "<tr><th>errors</th><td>" +
                                std::to_string(failed_2001 + failed_1003) + "</td></tr>"))
      << dom;
  EXPECT_TRUE(Contains(dom, "1003 EREQUEST: " + std::to_string(failed_1003))) << dom;
  EXPECT_TRUE(Contains(dom, "2001 EINTERNAL: " + std::to_string(failed_2001))) << dom;

  const auto status_png = dir / "status.png", blank_png = dir / "blank.png";
  ASSERT_TRUE(Screenshot(dir, "http://127.0.0.1:" + std::to_string(port_) + "/status",
                         status_png));
  ASSERT_TRUE(Screenshot(dir, "data:text/html,<html><body></body></html>", blank_png));

  Png status, blank;
  ASSERT_TRUE(ReadPng(status_png, &status));
  ASSERT_TRUE(ReadPng(blank_png, &blank));
  EXPECT_EQ(uint32_t{kWidth}, status.width);
  EXPECT_EQ(uint32_t{kHeight}, status.height);
  // A blank page is one colour (plus the rows' filter bytes); text, tables and the sparkline
  // bring many more, and compress far worse.
  EXPECT_LE(DistinctBytes(blank.pixels), 8u);
  EXPECT_GE(DistinctBytes(status.pixels), 64u);
  EXPECT_GT(std::filesystem::file_size(status_png), 4 * std::filesystem::file_size(blank_png));

  if (const char* update = std::getenv("ARENARPC_UPDATE_DOCS_IMG"); update && *update == '1') {
    std::filesystem::copy_file(status_png,
                               std::filesystem::path(ARENARPC_SOURCE_DIR) / "docs/img/status.png",
                               std::filesystem::copy_options::overwrite_existing);
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Modes, StatusScreenshotTest, ::testing::Values("paged"));

}  // namespace
}  // namespace arenarpc::builtin
