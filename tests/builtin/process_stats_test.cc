#include "stats/process_stats.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace arenarpc::stats {
namespace {

TEST(ProcessStatsTest, ParsesThreadsOfStatWithAnAwkwardCommandName) {
  // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
  // cutime cstime priority nice num_threads ...
  EXPECT_EQ(7u, ParseStatThreads(
                    "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 123 45 0 0 20 0 7 0 99 1\n"));
  EXPECT_FALSE(ParseStatThreads("no parenthesis 1 2 3").has_value());
  EXPECT_FALSE(ParseStatThreads("1 (x) S 1 2").has_value());  // too short
  EXPECT_FALSE(ParseStatThreads("1 (x) S 1 1 1 0 -1 0 0 0 0 0 1 45 0 0 20 0 x7 0").has_value());
}

TEST(ProcessStatsTest, SeesThisProcessThreadsFilesAndCpu) {
  // ThreadSanitizer starts a thread of its own with the first thread the program creates: let it
  // do so before counting.
  std::thread([] {}).join();
  const ProcessStats before = ReadProcessStats();
  EXPECT_GT(before.rss_bytes, 1u << 20);
  EXPECT_GE(before.fd_count, 3u);  // stdin, stdout, stderr at least
  EXPECT_GE(before.thread_count, 1u);

  // Two more threads and two more descriptors must show.
  std::mutex mutex;
  std::condition_variable cv;
  bool release = false;
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&] {
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return release; });
    });
  }
  const int fd1 = open("/dev/null", O_RDONLY), fd2 = open("/dev/null", O_RDONLY);
  // Burn some CPU so that the counter moves.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  volatile uint64_t spin = 0;
  while (std::chrono::steady_clock::now() < until) spin = spin + 1;
  const ProcessStats during = ReadProcessStats();
  {
    std::lock_guard lock(mutex);
    release = true;
  }
  cv.notify_all();
  for (auto& thread : threads) thread.join();
  close(fd1);
  close(fd2);
  EXPECT_EQ(before.thread_count + 2, during.thread_count);
  EXPECT_EQ(before.fd_count + 2, during.fd_count);
  EXPECT_GT(during.cpu_us(), before.cpu_us());
}

}  // namespace
}  // namespace arenarpc::stats
