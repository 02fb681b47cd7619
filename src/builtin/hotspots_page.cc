#include "builtin/hotspots_page.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

// The class only: MallocExtension::instance() is looked up at run time, so that nothing here
// links tcmalloc.
#include <gperftools/malloc_extension.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include "arenarpc/fiber.h"

extern char** environ;

namespace arenarpc::builtin {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxPprofOutput = 8u << 20;          // the text top list shown
constexpr std::chrono::seconds kPprofTimeout{120};    // symbolizing a large binary takes seconds

// gperftools' entry points, found in the process (linked or preloaded), or null.
struct Profilers {
  int (*profiler_start)(const char*) = nullptr;
  void (*profiler_stop)() = nullptr;
  MallocExtension* (*malloc_extension)() = nullptr;
};

const Profilers& FindProfilers() {
  static const Profilers profilers = [] {
    Profilers p;
    p.profiler_start = reinterpret_cast<int (*)(const char*)>(dlsym(RTLD_DEFAULT, "ProfilerStart"));
    p.profiler_stop = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "ProfilerStop"));
    p.malloc_extension = reinterpret_cast<MallocExtension* (*)()>(
        dlsym(RTLD_DEFAULT, "_ZN15MallocExtension8instanceEv"));  // MallocExtension::instance()
    return p;
  }();
  return profilers;
}

// One profile at a time, process-wide (the profilers are): the slot and when its profile ends.
std::atomic<bool> slot_taken{false};
std::atomic<int64_t> slot_ends_ns{0};

class SlotHold {
 public:
  SlotHold(Clock::duration expected) {
    bool expected_free = false;
    held_ = slot_taken.compare_exchange_strong(expected_free, true, std::memory_order_acq_rel);
    if (held_) {
      slot_ends_ns.store((Clock::now() + expected).time_since_epoch().count(),
                         std::memory_order_relaxed);
    }
  }
  ~SlotHold() {
    if (held_) slot_taken.store(false, std::memory_order_release);
  }
  SlotHold(const SlotHold&) = delete;
  SlotHold& operator=(const SlotHold&) = delete;
  bool held() const { return held_; }

 private:
  bool held_ = false;
};

void RefuseBusy(BuiltinReply* reply) {
  const auto left = Clock::time_point(Clock::duration(slot_ends_ns.load(std::memory_order_relaxed))) -
                    Clock::now();
  const int64_t retry = std::max<int64_t>(
      1, std::chrono::duration_cast<std::chrono::seconds>(left).count() + 1);
  reply->status = 503;
  reply->headers.emplace_back("Retry-After", std::to_string(retry));
  reply->body = "another profile is being taken in this process; try again in about " +
                std::to_string(retry) + " s\n";
}

std::string ExecutablePath() {
  std::array<char, 4096> path{};
  const ssize_t n = readlink("/proc/self/exe", path.data(), path.size() - 1);
  return n > 0 ? std::string(path.data(), static_cast<size_t>(n)) : std::string();
}

std::optional<std::string> FindOnPath(std::string_view name) {
  const char* path = getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    const size_t colon = dirs.find(':');
    std::string candidate(dirs.substr(0, colon));
    dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
    if (candidate.empty()) continue;
    candidate.append("/").append(name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

std::optional<std::string> FindPprof() {
  if (auto pprof = FindOnPath("google-pprof")) return pprof;
  return FindOnPath("pprof");
}

// A temporary file for one profile, removed when this goes.
class TempFile {
 public:
  explicit TempFile(std::string_view kind) {
    std::string pattern = "/tmp/arenarpc-" + std::to_string(getpid()) + "-" + std::string(kind) +
                          "-XXXXXX";
    const int fd = mkstemp(pattern.data());
    if (fd >= 0) {
      close(fd);
      path_ = std::move(pattern);
    }
  }
  ~TempFile() {
    if (!path_.empty()) unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::optional<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return std::move(out).str();
}

bool WriteWholeFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

struct ProcessOutput {
  bool ran = false;
  int exit_code = -1;
  std::string out;  // stdout and stderr, at most kMaxPprofOutput
};

// Runs `argv` to completion on a thread of its own (symbolizing blocks for seconds: not on the
// server's threads), the calling fiber waiting; killed after kPprofTimeout.
ProcessOutput RunProgram(std::vector<std::string> argv) {
  auto result = std::make_shared<ProcessOutput>();
  auto done = std::make_shared<fiber::Event>();
  std::thread([argv = std::move(argv), result, done] {
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
      done->Set();
      return;
    }
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
    pid_t pid = -1;
    const bool spawned =
        posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ) == 0;
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_fds[1]);
    if (spawned) {
      result->ran = true;
      const auto deadline = Clock::now() + kPprofTimeout;
      std::array<char, 16384> buffer;
      for (;;) {
        if (Clock::now() > deadline) {
          kill(pid, SIGKILL);
          break;
        }
        pollfd readable{pipe_fds[0], POLLIN, 0};
        if (poll(&readable, 1, 1000) == 0) continue;
        const ssize_t n = read(pipe_fds[0], buffer.data(), buffer.size());
        if (n > 0) {
          const size_t room = kMaxPprofOutput - result->out.size();
          result->out.append(buffer.data(), std::min(static_cast<size_t>(n), room));
        } else if (n == 0 || errno != EINTR) {
          break;
        }
      }
      int status = 0;
      waitpid(pid, &status, 0);
      result->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    close(pipe_fds[0]);
    done->Set();
  }).detach();
  done->Wait();
  return *result;
}

bool WantsRaw(const BuiltinRequest& request) {
  const auto it = request.query.find("format");
  return it != request.query.end() && it->second == "raw";
}

// Sends `profile` as asked: raw bytes, or google-pprof's text top list of it.
void SendProfile(const BuiltinRequest& request, std::string_view kind, std::string profile,
                 const std::string& pprof, BuiltinReply* reply) {
  if (WantsRaw(request)) {
    reply->content_type = "application/octet-stream";
    reply->headers.emplace_back("Content-Disposition",
                                "attachment; filename=\"" + std::string(kind) + ".prof\"");
    reply->body = std::move(profile);
    return;
  }
  TempFile file(std::string(kind) + "-text");
  if (file.path().empty() || !WriteWholeFile(file.path(), profile)) {
    reply->status = 500;
    reply->body = "cannot write the profile to /tmp\n";
    return;
  }
  const std::string binary = ExecutablePath();
  ProcessOutput text = RunProgram({pprof, "--text", binary, file.path()});
  if (!text.ran || text.exit_code != 0) {
    reply->status = 500;
    reply->body = pprof + " --text " + binary + " <profile> failed (exit " +
                  std::to_string(text.exit_code) + "):\n" + text.out +
                  "\nThe raw profile: ?format=raw\n";
    return;
  }
  reply->body = "# " + std::string(kind) + " profile of " + binary + " (pid " +
                std::to_string(getpid()) + "), google-pprof --text; raw: ?format=raw\n" + text.out;
}

// The pprof to use for a text reply, or a reply saying how to get one (false).
bool PprofForText(const BuiltinRequest& request, std::string* pprof, BuiltinReply* reply) {
  if (WantsRaw(request)) return true;
  if (auto found = FindPprof()) {
    *pprof = std::move(*found);
    return true;
  }
  reply->status = 501;
  reply->body =
      "google-pprof is not on this server's PATH (Debian: apt install google-perftools), so the "
      "profile cannot be shown as text here.\nAsk for ?format=raw and read it with "
      "`google-pprof --text <the server's binary> <file>` elsewhere.\n";
  return false;
}

std::optional<std::chrono::seconds> ParseSeconds(const BuiltinRequest& request,
                                                 BuiltinReply* reply) {
  const auto it = request.query.find("seconds");
  if (it == request.query.end()) return kDefaultCpuProfile;
  int64_t value = 0;
  const std::string& text = it->second;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 1 ||
      value > kMaxCpuProfile.count()) {
    reply->status = 400;
    reply->body = "seconds=" + text + " is invalid: 1.." + std::to_string(kMaxCpuProfile.count()) +
                  "\n";
    return std::nullopt;
  }
  return std::chrono::seconds(value);
}

void CpuPage(const BuiltinRequest& request, BuiltinReply* reply) {
  const Profilers& profilers = FindProfilers();
  if (profilers.profiler_start == nullptr || profilers.profiler_stop == nullptr) {
    reply->status = 501;
    reply->body =
        "the CPU profiler is not loaded in this process. Link gperftools' libprofiler into the "
        "server (Debian: libgoogle-perftools-dev; -Wl,--no-as-needed -lprofiler) or start it with "
        "LD_PRELOAD=libprofiler.so.0.\n";
    return;
  }
  const std::optional<std::chrono::seconds> seconds = ParseSeconds(request, reply);
  if (!seconds) return;
  std::string pprof;
  if (!PprofForText(request, &pprof, reply)) return;
  SlotHold slot(*seconds + std::chrono::seconds(5));
  if (!slot.held()) return RefuseBusy(reply);
  TempFile file("cpu");
  if (file.path().empty()) {
    reply->status = 500;
    reply->body = "cannot create a file in /tmp for the profile\n";
    return;
  }
  if (profilers.profiler_start(file.path().c_str()) == 0) {
    reply->status = 503;
    reply->body = "the CPU profiler did not start (is CPUPROFILE set for this process, or a "
                  "profile started by other code running?)\n";
    return;
  }
  fiber::SleepFor(*seconds);  // suspends this page's fiber: the server goes on serving
  profilers.profiler_stop();
  std::optional<std::string> profile = ReadWholeFile(file.path());
  if (!profile || profile->empty()) {
    reply->status = 500;
    reply->body = "the CPU profiler wrote no profile to " + file.path() + "\n";
    return;
  }
  SendProfile(request, "cpu", std::move(*profile), pprof, reply);
}

// tcmalloc's heap sample or growth stacks. Not checked by UBSan's vptr check: it would need the
// class's typeinfo, which only libtcmalloc has, and this library does not link it.
__attribute__((no_sanitize("vptr"))) std::string TakeHeapProfile(MallocExtension& tcmalloc,
                                                                 bool growth) {
  std::string profile;
  if (growth) {
    tcmalloc.GetHeapGrowthStacks(&profile);
  } else {
    tcmalloc.GetHeapSample(&profile);
  }
  return profile;
}

// /hotspots/heap (what is allocated now, sampled) and /hotspots/growth (where the heap grew).
void HeapPage(bool growth, const BuiltinRequest& request, BuiltinReply* reply) {
  const Profilers& profilers = FindProfilers();
  MallocExtension* tcmalloc =
      profilers.malloc_extension != nullptr ? profilers.malloc_extension() : nullptr;
  if (tcmalloc == nullptr) {
    reply->status = 501;
    reply->body =
        "heap profiles need tcmalloc in this process: link libtcmalloc (Debian: "
        "libgoogle-perftools-dev; -ltcmalloc) or start the server with "
        "LD_PRELOAD=libtcmalloc.so.4, and set TCMALLOC_SAMPLE_PARAMETER=524288 (sample every "
        "512 KiB allocated) in its environment.\n";
    return;
  }
  std::string pprof;
  if (!PprofForText(request, &pprof, reply)) return;
  SlotHold slot(kPprofTimeout);
  if (!slot.held()) return RefuseBusy(reply);
  std::string profile = TakeHeapProfile(*tcmalloc, growth);
  if (profile.empty()) {
    reply->status = 501;
    reply->body = "this tcmalloc gives no heap samples (tcmalloc_minimal does not sample: use "
                  "libtcmalloc.so.4)\n";
    return;
  }
  if (!growth && profile.starts_with("%warn")) {  // sampling is off: tcmalloc says how to set it
    reply->status = 501;
    reply->body = profile;
    return;
  }
  SendProfile(request, growth ? "growth" : "heap", std::move(profile), pprof, reply);
}

}  // namespace

void AddHotspotsPages(BuiltinRegistry* registry) {
  registry->Add("/hotspots/cpu",
                "CPU profile of the process for ?seconds=N (gperftools' libprofiler); "
                "?format=raw for the profile file",
                CpuPage);
  registry->Add("/hotspots/heap",
                "what the heap holds now, sampled (tcmalloc with TCMALLOC_SAMPLE_PARAMETER)",
                [](const BuiltinRequest& request, BuiltinReply* reply) {
                  HeapPage(false, request, reply);
                });
  registry->Add("/hotspots/growth", "where the heap grew (tcmalloc)",
                [](const BuiltinRequest& request, BuiltinReply* reply) {
                  HeapPage(true, request, reply);
                });
}

}  // namespace arenarpc::builtin
