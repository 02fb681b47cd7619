#pragma once
// GoodClient: a well-behaved client on its own channel calling Echo until stopped, counting
// failures and recording each call's latency: what the hostile-load tests check keeps working
// while a bad client attacks. GoodWindow and ExpectKeptUp compare a window of its calls under
// attack with one measured before the attack, on the same server.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/channel.h"
#include "arenarpc/controller.h"
#include "e2e_test.pb.h"
#include "process_rss.h"

namespace arenarpc::e2e {

// The good client's calls between two marks.
struct GoodWindow {
  int ok = 0;
  int failed = 0;
  double p99_ms = 0;  // of every call in the window, failed ones included
  double max_ms = 0;
  std::string last_error;
  int calls() const { return ok + failed; }
  double ok_share() const { return calls() == 0 ? 0 : static_cast<double>(ok) / calls(); }
};

// The floor under the unattacked p99 that the attacked p99 is compared with (5x). The good client
// makes ~400 calls a second on loopback; on a quiet machine its p99 is a fraction of a
// millisecond in release builds, but on a shared 2-core machine (ctest -j2, other builds) a
// wakeup the scheduler delays costs milliseconds whatever the server does: with no attack at
// all, half-second windows measured p99s from 0.14 ms to 32 ms there (load average 20). Without a
// floor, 5x a 0.2 ms baseline (1 ms) is passed by two such delays in the attacked window: the
// check would measure the machine, not the server. With 10 ms, attacks that keep the cores busy
// (the attacker, the server's threads and the good client share two cores) still passed 50 ms
// in about one test in twenty at that load. The floor is 20 ms (5x: 100 ms, still 6-10x under
// the 612-965 ms p99s these attacks caused before they were bounded).
inline constexpr double kGoodP99FloorMs = 20;
// Sanitizer builds run the same attacks for what they check (memory errors, races) and the good
// client's share of OK calls; their timing is not the server's (ThreadSanitizer measured the
// window-0 test at p99 125-202 ms alone and 494-544 ms beside another test, release 15-38 ms), so
// the p99 bound is asserted in release builds only and printed in all.
#if defined(ARENARPC_SANITIZED)
inline constexpr bool kGoodP99IsAsserted = false;
#else
inline constexpr bool kGoodP99IsAsserted = true;
#endif

// The p99 of fewer than 100 calls is their slowest call: one wakeup the scheduler of a loaded
// 2-core machine delays decides it (a full release suite under ctest -j2 and other builds saw
// 113 ms for the slowest of 40 calls of a test whose other windows measured 1-4 ms). Such a
// window's p99 is printed, not asserted; with 100 calls and more it leaves the slowest out.
inline constexpr int kMinCallsForGoodP99 = 100;

class GoodClient {
 public:
  explicit GoodClient(std::unique_ptr<Channel> channel)
      : channel_(std::move(channel)), thread_([this] { Loop(); }) {}
  ~GoodClient() { Stop(); }
  void Stop() {
    done_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  int calls() const { return calls_.load(); }
  int failures() const { return failures_.load(); }
  std::string last_error() {
    std::lock_guard lock(mutex_);
    return last_error_;
  }

  // A position in the client's calls: Window(from, to) covers the calls that ended in between.
  size_t Mark() {
    std::lock_guard lock(mutex_);
    return records_.size();
  }
  GoodWindow Window(size_t from, size_t to = SIZE_MAX) {
    std::lock_guard lock(mutex_);
    GoodWindow window;
    to = std::min(to, records_.size());
    std::vector<int64_t> latencies;
    for (size_t i = from; i < to; ++i) {
      latencies.push_back(records_[i].latency_us);
      (records_[i].ok ? window.ok : window.failed) += 1;
    }
    if (!latencies.empty()) {
      std::sort(latencies.begin(), latencies.end());
      const size_t at = (latencies.size() * 99 + 99) / 100 - 1;  // nearest rank
      window.p99_ms = latencies[at] / 1000.0;
      window.max_ms = latencies.back() / 1000.0;
    }
    window.last_error = last_error_;
    return window;
  }
  // The calls of the next `duration`, and at least `min_calls` of them (e.g. the unattacked
  // baseline before an attack starts).
  GoodWindow Measure(std::chrono::milliseconds duration, int min_calls = 100) {
    const size_t from = Mark();
    const auto end = std::chrono::steady_clock::now() + duration;
    const auto give_up = end + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < give_up &&
           (std::chrono::steady_clock::now() < end ||
            Mark() - from < static_cast<size_t>(min_calls))) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return Window(from);
  }

 private:
  struct Record {
    int64_t latency_us;
    bool ok;
  };
  void Loop() {
    TestService_Stub stub(channel_.get());
    for (int i = 0; !done_.load() || i < 10; ++i) {
      Controller controller;
      TestRequest request;
      request.set_message("good-" + std::to_string(i));
      TestResponse response;
      const auto start = std::chrono::steady_clock::now();
      stub.Echo(&controller, &request, &response, nullptr);
      const int64_t latency_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::steady_clock::now() - start)
                                     .count();
      const bool ok = !controller.Failed() && response.message() == request.message();
      {
        std::lock_guard lock(mutex_);
        records_.push_back({latency_us, ok});
        if (!ok) last_error_ = controller.ErrorText();
      }
      (ok ? calls_ : failures_).fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  std::unique_ptr<Channel> channel_;
  std::atomic<bool> done_{false};
  std::atomic<int> calls_{0}, failures_{0};
  std::mutex mutex_;
  std::string last_error_;
  std::vector<Record> records_;
  std::thread thread_;
};

// Issue 39's bar for a good client while another client attacks the same server: at least 99 %
// of its calls OK and its p99 at most 5x the p99 it had unattacked (floored at kGoodP99FloorMs;
// asserted in release builds for windows of kMinCallsForGoodP99 calls and more). Prints both
// windows, so that a run's log shows what was measured.
inline void ExpectKeptUp(const GoodWindow& baseline, const GoodWindow& attacked,
                         const std::string& what = "") {
  std::printf(
      "[ measured ] good client%s%s: unattacked p99 %.2f ms (%d calls), under attack "
      "p99 %.2f ms, max %.2f ms (%d ok, %d failed)\n",
      what.empty() ? "" : " ", what.c_str(), baseline.p99_ms, baseline.calls(), attacked.p99_ms,
      attacked.max_ms, attacked.ok, attacked.failed);
  EXPECT_GT(baseline.calls(), 0) << what;
  EXPECT_GT(attacked.calls(), 0) << what;
  EXPECT_GE(attacked.ok_share(), 0.99) << what << ": " << attacked.ok << " of " << attacked.calls()
                                       << " ok; " << attacked.last_error;
  const double bound_ms = 5 * std::max(baseline.p99_ms, kGoodP99FloorMs);
  if (kGoodP99IsAsserted && attacked.calls() >= kMinCallsForGoodP99) {
    EXPECT_LE(attacked.p99_ms, bound_ms)
        << what << ": p99 under attack " << attacked.p99_ms << " ms, unattacked "
        << baseline.p99_ms << " ms (bound 5 x max(that, " << kGoodP99FloorMs << " ms))";
  }
}

// How long a hostile test keeps attacking: attacks that take a few milliseconds are repeated
// (RepeatAttack) so that the good client's window under attack holds a few hundred calls, and
// its p99 says something (of 20 calls, the p99 is the slowest one).
inline constexpr std::chrono::milliseconds kAttackTime{1000};

// Runs `round` (one attack) again and again until `duration` passed, at least once, stopping at
// a fatal failure; returns the rounds run.
inline int RepeatAttack(const std::function<void()>& round,
                        std::chrono::milliseconds duration = kAttackTime) {
  const auto end = std::chrono::steady_clock::now() + duration;
  int rounds = 0;
  do {
    round();
    ++rounds;
  } while (!::testing::Test::HasFatalFailure() && std::chrono::steady_clock::now() < end);
  return rounds;
}

// One hostile test's measure of the good client and of the process: Begin (the good client
// running) measures the unattacked baseline for half a second, then marks the attack's start and
// resets the peak resident size; End marks its end (once); Finish compares the two windows
// (ExpectKeptUp) and the peak resident growth since Begin with the stated `bound` (where the
// build measures RSS: not under sanitizers), and stops the good client.
class AttackMeter {
 public:
  void Begin(GoodClient* good) {
    good_ = good;
    baseline_ = good->Measure(std::chrono::milliseconds(500));
    from_ = good->Mark();
    rss_before_ = RssBytes();
    ResetPeakRss();
  }
  bool begun() const { return good_ != nullptr; }
  void End() {
    if (good_ == nullptr || to_ != SIZE_MAX) return;
    to_ = good_->Mark();
    peak_growth_ = PeakRssBytes() - std::min(rss_before_, PeakRssBytes());
  }
  // Checks, then stops the good client: it had 0 failures in all and made some calls.
  void Finish(uint64_t bound, const std::string& what) {
    End();
    ExpectKeptUp(baseline_, good_->Window(from_, to_), what);
    std::printf("[ measured ] peak RSS growth under attack %llu MiB (stated bound %llu MiB)\n",
                static_cast<unsigned long long>(peak_growth_ >> 20),
                static_cast<unsigned long long>(bound >> 20));
    if (kMeasuresRss) {
      EXPECT_LE(peak_growth_, bound) << what << ": " << (peak_growth_ >> 20) << " MiB";
    }
    good_->Stop();
    EXPECT_EQ(0, good_->failures()) << what << ": " << good_->last_error();
    EXPECT_GE(good_->calls(), 10) << what;
  }

 private:
  GoodClient* good_ = nullptr;
  GoodWindow baseline_;
  size_t from_ = 0, to_ = SIZE_MAX;
  uint64_t rss_before_ = 0, peak_growth_ = 0;
};

}  // namespace arenarpc::e2e
