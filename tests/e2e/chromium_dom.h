#pragma once
// DumpDom: the DOM a headless Chromium (/usr/bin/chromium) rendered for a page (--dump-dom),
// for the tests that check what a real browser shows.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace arenarpc::e2e {

// Runs Chromium on `url` (its profile and output under `dir`, at most 90 s) and returns the DOM
// it rendered; empty if it failed. `flags`: more command-line flags (e.g. a virtual time budget
// for pages whose scripts wait on the network).
inline std::string DumpDom(const std::filesystem::path& dir, const std::string& url,
                           const std::string& flags = {}) {
  const auto out = dir / "dom.html";
  const std::string command =
      "timeout 90 /usr/bin/chromium --headless --no-sandbox --disable-gpu --no-first-run "
      "--disable-extensions --user-data-dir='" + (dir / "profile").string() + "' " + flags +
      " --dump-dom '" + url + "' > '" + out.string() + "' 2> '" + (dir / "chromium.log").string() +
      "'";
  if (std::system(command.c_str()) != 0) return {};
  std::ifstream in(out);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace arenarpc::e2e
