#include "press/proc_stats.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <time.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

namespace arenarpc::press {
namespace {

double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

TEST(ProcStats, ParsesStatEvenWithHostileComm) {
  // comm may hold spaces and parentheses; utime/stime are fields 14 and 15.
  const std::string stat =
      "4242 (my (weird) proc) S 1 4242 4242 0 -1 4194560 1500 0 3 0 1234 567 0 0 20 0 8 0 "
      "100 123456789 2048 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  const auto ticks = ParseProcStat(stat);
  ASSERT_TRUE(ticks.has_value());
  EXPECT_EQ(ticks->user, 1234u);
  EXPECT_EQ(ticks->system, 567u);
  EXPECT_EQ(ticks->total(), 1801u);
}

TEST(ProcStats, RejectsMalformedStat) {
  EXPECT_FALSE(ParseProcStat("").has_value());
  EXPECT_FALSE(ParseProcStat("42 (short) S 1 2 3").has_value());
  EXPECT_FALSE(ParseProcStat("42 no-paren S 1 2 3 4 5 6 7 8 9 10 11 12 13").has_value());
  EXPECT_FALSE(ParseProcStat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 12a 5 0").has_value());
}

TEST(ProcStats, ParsesVmRss) {
  const std::string status =
      "Name:\techo_server\nVmPeak:\t  200000 kB\nVmRSS:\t   45120 kB\nRssAnon:\t 40000 kB\n";
  EXPECT_EQ(ParseVmRssBytes(status), std::optional<uint64_t>(45120ull * 1024));
  EXPECT_EQ(ParseVmRssBytes("VmRSS:\t12 kB\n"), std::optional<uint64_t>(12ull * 1024));
  EXPECT_FALSE(ParseVmRssBytes("Name:\tkthreadd\nThreads:\t1\n").has_value());  // kernel thread
  EXPECT_FALSE(ParseVmRssBytes("VmRSS:\t12 MB\n").has_value());
  EXPECT_FALSE(ParseVmRssBytes("VmRSS:\tlots kB\n").has_value());
}

TEST(ProcStats, ReadsThisProcessAndNotAMissingOne) {
  EXPECT_TRUE(ReadCpuTicks(getpid()).has_value());
  const auto rss = ReadVmRssBytes(getpid());
  ASSERT_TRUE(rss.has_value());
  EXPECT_GT(*rss, 1u << 20);
  EXPECT_FALSE(ReadCpuTicks(-7).has_value());
  EXPECT_FALSE(ReadVmRssBytes(-7).has_value());
  EXPECT_GT(TicksPerSecond(), 0);
}

TEST(ProcStats, SamplerMeasuresCpuAndPeakRssOfTheWindow) {
  ProcessSampler sampler(getpid(), std::chrono::milliseconds(5));
  const double cpu_before = ProcessCpuSeconds();
  ASSERT_TRUE(sampler.Start());
  // Busy for ~300 ms, touch 64 MB in the middle, free it before Stop(): the peak must see it,
  // the end must not need to.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  volatile uint64_t sink = 0;
  {
    constexpr size_t kBytes = 64u << 20;
    auto block = std::make_unique<char[]>(kBytes);
    std::memset(block.get(), 1, kBytes);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // let a sample see it
    sink = sink + static_cast<uint64_t>(block[kBytes - 1]);
  }
  while (std::chrono::steady_clock::now() < until) sink = sink + 1;
  const ProcessUsage usage = sampler.Stop();
  const double cpu_used = ProcessCpuSeconds() - cpu_before;
  EXPECT_TRUE(usage.valid);
  EXPECT_GT(usage.wall_seconds, 0.29);
  // /proc's utime+stime agrees with the kernel's own CPU clock for this process, within the
  // 10 ms tick granularity at both ends (whatever share of a core a busy machine left us).
  EXPECT_NEAR(usage.cpu_seconds, cpu_used, 0.03);
  EXPECT_GT(usage.cpu_seconds, 0.0);
  EXPECT_NEAR(usage.cores, usage.cpu_seconds / usage.wall_seconds, 1e-9);
  EXPECT_GE(usage.rss_peak, usage.rss_start + (50u << 20));
  EXPECT_GE(usage.rss_peak, usage.rss_end);
  EXPECT_GT(usage.rss_samples, 3u);
  const ProcessUsage again = sampler.Stop();  // idempotent
  EXPECT_EQ(again.rss_peak, usage.rss_peak);
}

TEST(ProcStats, SamplerRefusesAMissingProcess) {
  ProcessSampler sampler(-7);
  EXPECT_FALSE(sampler.Start());
  EXPECT_FALSE(sampler.Stop().valid);
}

}  // namespace
}  // namespace arenarpc::press
