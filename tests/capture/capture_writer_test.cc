// The writer thread: rotation within max_file_bytes / max_files under a load far above what it
// keeps, and a stalled disk that fills the queue: Submit() keeps returning at once and counts
// what it drops.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "capture/capture_settings.h"
#include "capture/capture_writer.h"
#include "capture/dump_reader.h"
#include "util/sample_budget.h"

namespace arenarpc::capture {
namespace {

std::string FreshDirectory(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("arenarpc_capture_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

RpcDumpMeta Meta(int i) {
  RpcDumpMeta meta;
  meta.set_service_name("pkg.Service");
  meta.set_method_name("Method" + std::to_string(i % 7));
  meta.set_protocol(CAPTURED_BAIDU_STD);
  return meta;
}

TEST(CaptureWriter, RotatesWithinSizeAndCount) {
  CaptureOptions options;
  options.directory = FreshDirectory("rotate");
  options.max_file_bytes = 4096;
  options.max_files = 3;
  options.max_queued_records = 100000;
  options.max_queued_bytes = 64u << 20;
  const std::string request(300, 'r');
  size_t record_bytes = 0;
  {
    CaptureWriter writer(options);
    for (int i = 0; i < 500; ++i) ASSERT_TRUE(writer.Submit(Meta(i), request));
    ASSERT_TRUE(writer.Flush(std::chrono::seconds(30)));
    const CaptureCounters counters = writer.counters();
    EXPECT_EQ(counters.sampled, 500u);
    EXPECT_EQ(counters.written, 500u);
    EXPECT_EQ(counters.dropped, 0u);
    EXPECT_GT(counters.files_opened, 3u);
    EXPECT_EQ(counters.files_deleted, counters.files_opened - 3);
    EXPECT_EQ(writer.files().size(), 3u);
    std::string one;
    ASSERT_TRUE(AppendRecord(Meta(0), request, &one));
    record_bytes = one.size() + 1;  // Method names differ by at most a digit
  }
  size_t files = 0, records = 0;
  for (const auto& entry : std::filesystem::directory_iterator(options.directory)) {
    ++files;
    const auto size = std::filesystem::file_size(entry.path());
    EXPECT_LT(size, options.max_file_bytes + record_bytes) << entry.path();
    std::string bytes, error;
    ASSERT_TRUE(ReadDumpFile(entry.path().string(), &bytes, &error)) << error;
    DumpReader reader(bytes);
    DumpRecord record;
    while (reader.Next(&record)) {
      EXPECT_EQ(record.request, request);
      ++records;
    }
    EXPECT_TRUE(reader.damages().empty());
  }
  EXPECT_EQ(files, 3u);
  EXPECT_GT(records, 0u);
  std::filesystem::remove_all(options.directory);
}

TEST(CaptureWriter, StalledDiskDropsAndCountsWithoutBlocking) {
  CaptureOptions options;
  options.directory = FreshDirectory("stall");
  options.max_queued_records = 16;
  options.max_queued_bytes = 64u << 10;
  CaptureWriter writer(options);
  writer.HoldWrites(true);
  int accepted = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) accepted += writer.Submit(Meta(i), std::string(100, 'x')) ? 1 : 0;
  const auto took = std::chrono::steady_clock::now() - start;
  // 1000 submissions against a disk that writes nothing: none waited for it.
  EXPECT_LT(took, std::chrono::milliseconds(500));
  EXPECT_EQ(accepted, 16);
  CaptureCounters counters = writer.counters();
  EXPECT_EQ(counters.dropped, 1000u - 16u);
  EXPECT_EQ(counters.queued_records, 16u);
  EXPECT_LE(counters.queued_bytes, options.max_queued_bytes);
  EXPECT_EQ(counters.written, 0u);
  writer.HoldWrites(false);
  ASSERT_TRUE(writer.Flush(std::chrono::seconds(30)));
  counters = writer.counters();
  EXPECT_EQ(counters.written, 16u);
  EXPECT_EQ(counters.queued_bytes, 0u);
  std::filesystem::remove_all(options.directory);
}

TEST(CaptureWriter, ByteBoundDropsALargeRecord) {
  CaptureOptions options;
  options.directory = FreshDirectory("bytes");
  options.max_queued_bytes = 8192;
  CaptureWriter writer(options);
  EXPECT_FALSE(writer.Submit(Meta(0), std::string(9000, 'x')));
  EXPECT_TRUE(writer.Submit(Meta(0), std::string(1000, 'x')));
  ASSERT_TRUE(writer.Flush(std::chrono::seconds(30)));
  EXPECT_EQ(writer.counters().dropped, 1u);
  EXPECT_EQ(writer.counters().written, 1u);
  std::filesystem::remove_all(options.directory);
}

// A request submitted as shared blocks is written as the same bytes as a copied one, and is
// charged what its blocks pin: a few bytes in a page of their own count the page.
TEST(CaptureWriter, SharedRequestsWriteTheirBytesAndAreChargedWhatTheyPin) {
  CaptureOptions options;
  options.directory = FreshDirectory("shared");
  options.max_queued_bytes = 64u << 10;
  CaptureWriter writer(options);
  writer.HoldWrites(true);
  net::BufferChain large;
  const std::string bytes(40000, 'L');
  large.Append(bytes.substr(0, 30000));
  large.Append(bytes.substr(30000));
  ASSERT_TRUE(writer.Submit(Meta(1), std::move(large)));
  ASSERT_TRUE(writer.Submit(Meta(2), std::string("copied")));
  net::BufferChain small;
  small.Append("tiny");
  const size_t pinned = small.held_bytes();
  ASSERT_GT(pinned, 4u);
  ASSERT_TRUE(writer.Submit(Meta(3), std::move(small)));
  EXPECT_GE(writer.counters().queued_bytes, 40000u + 6 + pinned);
  writer.HoldWrites(false);
  ASSERT_TRUE(writer.Flush(std::chrono::seconds(30)));
  EXPECT_EQ(writer.counters().written, 3u);
  ASSERT_EQ(writer.files().size(), 1u);
  std::string file, error;
  ASSERT_TRUE(ReadDumpFile(writer.files()[0], &file, &error)) << error;
  DumpReader reader(file);
  DumpRecord record;
  std::vector<std::string> requests;
  while (reader.Next(&record)) requests.push_back(record.request);
  EXPECT_TRUE(reader.damages().empty());
  EXPECT_EQ(requests, (std::vector<std::string>{bytes, "copied", "tiny"}));
  std::filesystem::remove_all(options.directory);
}

TEST(SampleBudget, TakesTheBudgetOfEachSecondUnderTenTimesTheLoad) {
  util::SampleBudget budget(50);
  const auto base = std::chrono::steady_clock::time_point(std::chrono::seconds(1000));
  for (int second = 0; second < 3; ++second) {
    int taken = 0;
    for (int i = 0; i < 500; ++i) {
      taken += budget.Take(base + std::chrono::seconds(second) + std::chrono::milliseconds(i))
                   ? 1
                   : 0;
    }
    EXPECT_EQ(taken, 50) << "second " << second;
  }
}

TEST(CaptureSettings, ParsesTheEnvironmentFormAndRejectsBadInput) {
  CaptureOptions options;
  EXPECT_EQ(ParseCaptureSetting("/tmp/d,samples_per_second=7,max_files=2", &options), "");
  EXPECT_EQ(options.directory, "/tmp/d");
  EXPECT_EQ(options.samples_per_second, 7);
  EXPECT_EQ(options.max_files, 2);
  CaptureOptions other;
  EXPECT_NE(ParseCaptureSetting("/tmp/d,bogus=1", &other).find("unknown setting 'bogus'"),
            std::string::npos);
  EXPECT_NE(ParseCaptureSetting("/tmp/d,max_files=x", &other).find("not name=number"),
            std::string::npos);
  EXPECT_NE(ParseCaptureSetting("/tmp/d,max_file_bytes=10", &other).find("max_file_bytes"),
            std::string::npos);
  EXPECT_NE(ParseCaptureSetting("", &other).find("no directory"), std::string::npos);
}

}  // namespace
}  // namespace arenarpc::capture
