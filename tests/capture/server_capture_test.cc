// Capture in a running server: one call per protocol comes back out of the dump files with the
// bytes the client sent; a stalled writer under ten times the budget's load drops and counts
// records while every call still succeeds; rotation holds its file count and size under ten
// times the budget's load; the budget is a live setting (/flags), 0 pausing capture.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "arenarpc/channel.h"
#include "arenarpc/controller.h"
#include "arenarpc/server.h"
#include "capture/dump_reader.h"
#include "capture/request_capture.h"
#include "http_client.h"
#include "recording_service.h"
#include "server/server_access.h"

namespace arenarpc::capture_test {
namespace {

std::string FreshDirectory(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("arenarpc_server_capture_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

std::vector<capture::DumpRecord> ReadAll(const std::string& directory) {
  std::vector<std::string> paths;
  std::string error;
  EXPECT_TRUE(capture::ListDumpFiles(directory, &paths, &error)) << error;
  std::vector<capture::DumpRecord> records;
  for (const std::string& path : paths) {
    std::string bytes;
    EXPECT_TRUE(capture::ReadDumpFile(path, &bytes, &error)) << error;
    capture::DumpReader reader(bytes);
    capture::DumpRecord record;
    while (reader.Next(&record)) records.push_back(record);
    EXPECT_TRUE(reader.damages().empty()) << path;
  }
  return records;
}

class ServerCaptureTest : public ::testing::Test {
 protected:
  void Start(CaptureOptions capture) {
    ServerOptions options;
    options.num_threads = 2;
    options.capture = std::move(capture);
    ASSERT_EQ(0, server_.AddService(&service_, SERVER_DOESNT_OWN_SERVICE));
    ASSERT_EQ(0, server_.Start("127.0.0.1:0", options)) << server_.last_error();
    address_ = "127.0.0.1:" + std::to_string(server_.listen_port());
  }
  capture::RequestCapture& Capture() {
    capture::RequestCapture* capture = internal::ServerAccess::Capture(server_);
    EXPECT_NE(capture, nullptr);
    return *capture;
  }
  void Call(Channel& channel, const e2e::TestRequest& request, const std::string& attachment) {
    Controller cntl;
    cntl.request_attachment().Append(attachment);
    e2e::TestResponse response;
    e2e::TestService_Stub stub(&channel);
    stub.Echo(&cntl, &request, &response, nullptr);
    ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
    EXPECT_EQ(response.message(), "echo:" + request.message());
  }

  RecordingService service_;
  Server server_;
  std::string address_;
};

TEST_F(ServerCaptureTest, EachProtocolReadsBackWithTheBytesSent) {
  CaptureOptions capture;
  capture.directory = FreshDirectory("protocols");
  Start(capture);

  e2e::TestRequest baidu;
  baidu.set_message("over baidu_std");
  baidu.add_items("a");
  Channel baidu_channel;
  ASSERT_EQ(0, baidu_channel.Init(address_.c_str(), nullptr));
  Call(baidu_channel, baidu, "attached");

  // A large request: queued as the blocks it arrived in, not copied on the I/O thread.
  e2e::TestRequest large;
  large.set_message("large over baidu_std");
  large.add_items(std::string(100000, 'L'));
  Call(baidu_channel, large, "and its attachment");

  e2e::HttpClient http(server_.listen_port());
  const std::string body = R"({"message":"over http","items":["x","y"]})";
  ASSERT_TRUE(http.Send("POST /arenarpc.e2e.TestService/Echo HTTP/1.1\r\nHost: t\r\n"
                        "Content-Type: application/json\r\nAuthorization: secret-token\r\n"
                        "X-Custom: kept\r\nContent-Length: " + std::to_string(body.size()) +
                        "\r\n\r\n" + body));
  auto reply = http.Read();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 200);

  e2e::TestRequest grpc;
  grpc.set_message("over grpc");
  ChannelOptions grpc_options;
  grpc_options.protocol = "grpc";
  Channel grpc_channel;
  ASSERT_EQ(0, grpc_channel.Init(address_.c_str(), &grpc_options));
  Call(grpc_channel, grpc, "");

  ASSERT_TRUE(Capture().writer().Flush(std::chrono::seconds(10)));
  std::vector<capture::DumpRecord> records = ReadAll(capture.directory);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[1].request, large.SerializeAsString() + "and its attachment");
  EXPECT_EQ(records[1].meta.attachment_size(), 18);
  EXPECT_EQ(service_.received()[1], records[1].request);
  records.erase(records.begin() + 1);

  const capture::DumpRecord& b = records[0];
  EXPECT_EQ(b.meta.protocol(), capture::CAPTURED_BAIDU_STD);
  EXPECT_EQ(b.meta.protocol_type(), 1);  // brpc's PROTOCOL_BAIDU_STD
  EXPECT_EQ(b.meta.service_name(), "arenarpc.e2e.TestService");
  EXPECT_EQ(b.meta.method_name(), "Echo");
  EXPECT_EQ(b.meta.attachment_size(), 8);
  EXPECT_EQ(b.request, baidu.SerializeAsString() + "attached");
  EXPECT_EQ(service_.received()[0], b.request);  // what the handler got, byte for byte

  const capture::DumpRecord& h = records[1];
  EXPECT_EQ(h.meta.protocol(), capture::CAPTURED_HTTP);
  EXPECT_EQ(h.meta.protocol_type(), 6);  // brpc's PROTOCOL_HTTP
  EXPECT_EQ(h.meta.http_method(), "POST");
  EXPECT_EQ(h.meta.path(), "/arenarpc.e2e.TestService/Echo");
  EXPECT_EQ(h.meta.method_name(), "Echo");
  EXPECT_TRUE(h.request.starts_with("POST /arenarpc.e2e.TestService/Echo HTTP/1.1\r\n"));
  EXPECT_TRUE(h.request.ends_with("\r\n\r\n" + body));
  EXPECT_NE(h.request.find("x-custom: kept\r\n"), std::string::npos);
  // Credentials stay out unless include_credentials says otherwise.
  EXPECT_EQ(h.request.find("secret-token"), std::string::npos);
  for (const auto& header : h.meta.headers()) EXPECT_NE(header.name(), "authorization");

  const capture::DumpRecord& g = records[2];
  EXPECT_EQ(g.meta.protocol(), capture::CAPTURED_GRPC);
  EXPECT_FALSE(g.meta.has_protocol_type());  // brpc has no gRPC type: its replay skips it
  EXPECT_EQ(g.meta.path(), "/arenarpc.e2e.TestService/Echo");
  EXPECT_EQ(g.request, grpc.SerializeAsString());
  EXPECT_EQ(service_.received()[3], g.request);

  const ServerStats stats = server_.GetServerStats();
  EXPECT_EQ(stats.capture_sampled, 4u);
  EXPECT_EQ(stats.capture_written, 4u);
  std::filesystem::remove_all(capture.directory);
}

TEST_F(ServerCaptureTest, StalledWriterDropsAndCallsKeepSucceeding) {
  CaptureOptions capture;
  capture.directory = FreshDirectory("stalled");
  capture.samples_per_second = 20;
  capture.max_queued_records = 4;
  Start(capture);
  Capture().writer().HoldWrites(true);  // the disk stops
  Channel channel;
  ChannelOptions options;
  options.timeout_ms = 2000;
  ASSERT_EQ(0, channel.Init(address_.c_str(), &options));
  e2e::TestRequest request;
  request.set_message("m");
  // Ten times the budget for a little over a second: 200 calls/s against 20 samples/s.
  const auto start = std::chrono::steady_clock::now();
  auto slowest = std::chrono::steady_clock::duration::zero();
  for (int i = 0; i < 250; ++i) {
    const auto before = std::chrono::steady_clock::now();
    Call(channel, request, "");
    slowest = std::max(slowest, std::chrono::steady_clock::now() - before);
    std::this_thread::sleep_until(start + std::chrono::milliseconds(5 * (i + 1)));
  }
  // No call waited for the stalled disk (the handler itself is instant).
  EXPECT_LT(slowest, std::chrono::milliseconds(500));
  ServerStats stats = server_.GetServerStats();
  EXPECT_GE(stats.capture_sampled, 20u);
  EXPECT_LE(stats.capture_sampled, 60u);  // the budget held: at most 20 in each second touched
  EXPECT_EQ(stats.capture_dropped, stats.capture_sampled - 4);
  EXPECT_EQ(stats.capture_written, 0u);

  e2e::HttpClient http(server_.listen_port());
  ASSERT_TRUE(http.Send("GET /vars HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto vars = http.Read();
  ASSERT_TRUE(vars.has_value());
  EXPECT_NE(vars->body.find("rpc_server_capture_dropped : " +
                            std::to_string(stats.capture_dropped)),
            std::string::npos)
      << vars->body;

  Capture().writer().HoldWrites(false);
  ASSERT_TRUE(Capture().writer().Flush(std::chrono::seconds(10)));
  EXPECT_EQ(server_.GetServerStats().capture_written, 4u);
  EXPECT_EQ(ReadAll(capture.directory).size(), 4u);
  std::filesystem::remove_all(capture.directory);
}

TEST_F(ServerCaptureTest, RotationHoldsItsBoundsUnderTenTimesTheBudget) {
  CaptureOptions capture;
  capture.directory = FreshDirectory("rotation");
  capture.samples_per_second = 20;
  capture.max_file_bytes = 4096;
  capture.max_files = 2;
  Start(capture);
  Channel channel;
  ASSERT_EQ(0, channel.Init(address_.c_str(), nullptr));
  e2e::TestRequest request;
  request.set_message("rotate");
  request.add_items(std::string(600, 'r'));  // a record of ~700 bytes: 6 to a file
  // 200 calls a second for 2 s: ten times the budget.
  const auto start = std::chrono::steady_clock::now();
  int calls = 0;
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(2)) {
    Call(channel, request, "");
    ++calls;
    std::this_thread::sleep_until(start + calls * std::chrono::milliseconds(5));
  }
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_TRUE(Capture().writer().Flush(std::chrono::seconds(10)));
  const capture::CaptureCounters counters = Capture().writer().counters();
  EXPECT_GT(calls, 300);
  // Each second of the steady clock the run touched took at most 20.
  EXPECT_GE(counters.sampled, 20u);
  EXPECT_LE(counters.sampled, 20u * static_cast<uint64_t>(seconds + 1)) << calls << " calls";
  EXPECT_EQ(counters.written, counters.sampled);
  EXPECT_GT(counters.files_opened, 2u);  // it rotated...
  EXPECT_EQ(counters.files_deleted, counters.files_opened - 2);  // ... and kept 2
  size_t files = 0;
  size_t kept = 0;
  for (const auto& entry : std::filesystem::directory_iterator(capture.directory)) {
    ++files;
    // A file is closed once it holds max_file_bytes: it passes it by less than one record.
    EXPECT_LT(std::filesystem::file_size(entry.path()), capture.max_file_bytes + 1024u);
    std::string bytes, error;
    ASSERT_TRUE(capture::ReadDumpFile(entry.path().string(), &bytes, &error)) << error;
    capture::DumpReader reader(bytes);
    capture::DumpRecord record;
    while (reader.Next(&record)) {
      EXPECT_EQ(record.request, request.SerializeAsString());
      ++kept;
    }
    EXPECT_TRUE(reader.damages().empty());
  }
  EXPECT_EQ(files, 2u);
  EXPECT_GT(kept, 0u);
  std::filesystem::remove_all(capture.directory);
}

// One GET on a connection of its own: (status, body).
std::pair<int, std::string> Get(int port, const std::string& target) {
  e2e::HttpClient http(port);
  if (!http.Send("GET " + target + " HTTP/1.1\r\nHost: t\r\n\r\n")) return {0, "not sent"};
  auto reply = http.Read();
  if (!reply) return {0, "no reply"};
  return {reply->status, reply->body};
}

TEST_F(ServerCaptureTest, TheBudgetIsALiveSettingAndZeroPausesCapture) {
  CaptureOptions capture;
  capture.directory = FreshDirectory("live");
  capture.samples_per_second = 0;  // configured, paused
  Start(capture);
  const int port = server_.listen_port();
  EXPECT_NE(Get(port, "/flags").second.find("capture.samples_per_second = 0\n"),
            std::string::npos);
  Channel channel;
  ASSERT_EQ(0, channel.Init(address_.c_str(), nullptr));
  e2e::TestRequest request;
  request.set_message("live");
  for (int i = 0; i < 20; ++i) Call(channel, request, "");
  EXPECT_EQ(server_.GetServerStats().capture_sampled, 0u);

  auto [status, body] = Get(port, "/flags/capture.samples_per_second?setvalue=1000");
  ASSERT_EQ(status, 200) << body;
  EXPECT_EQ(body, "capture.samples_per_second: 0 -> 1000\n");
  for (int i = 0; i < 7; ++i) Call(channel, request, "");
  EXPECT_EQ(server_.GetServerStats().capture_sampled, 7u);
  ASSERT_EQ(0, server_.SetLiveSetting("capture.samples_per_second", "0"));
  for (int i = 0; i < 7; ++i) Call(channel, request, "");
  EXPECT_EQ(server_.GetServerStats().capture_sampled, 7u);
  ASSERT_TRUE(Capture().writer().Flush(std::chrono::seconds(10)));
  EXPECT_EQ(ReadAll(capture.directory).size(), 7u);
  EXPECT_NE(Get(port, "/flags").second.find(
                " capture.samples_per_second: 1000 -> 0 by Server::SetLiveSetting\n"),
            std::string::npos);

  for (const char* bad : {"-1", "100001", "lots", ""}) {
    std::tie(status, body) =
        Get(port, std::string("/flags/capture.samples_per_second?setvalue=") + bad);
    EXPECT_EQ(status, 400) << bad << ": " << body;
    EXPECT_NE(body.find("expected 0..100000"), std::string::npos) << body;
  }
  std::tie(status, body) = Get(port, "/flags/capture.max_files?setvalue=3");
  EXPECT_EQ(status, 403) << body;
  std::filesystem::remove_all(capture.directory);
}

TEST(ServerCaptureOptions, TheLiveBudgetNeedsCaptureOnAtStart) {
  RecordingService service;
  Server server;
  ASSERT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE));
  ASSERT_EQ(0, server.Start("127.0.0.1:0", ServerOptions{})) << server.last_error();
  EXPECT_NE(Get(server.listen_port(), "/flags").second.find("capture.samples_per_second = off\n"),
            std::string::npos);
  const auto [status, body] = Get(server.listen_port(),
                                  "/flags/capture.samples_per_second?setvalue=10");
  EXPECT_EQ(status, 403) << body;
  EXPECT_NE(body.find("capture is off"), std::string::npos) << body;
  EXPECT_EQ(internal::ServerAccess::Capture(server), nullptr);
}

TEST(ServerCaptureOptions, BadOptionsAndEnvironmentFailStart) {
  RecordingService service;
  {
    Server server;
    ASSERT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE));
    ServerOptions options;
    options.capture.directory = "/tmp/x";
    options.capture.max_files = 0;
    EXPECT_EQ(-1, server.Start("127.0.0.1:0", options));
    EXPECT_NE(server.last_error().find("capture.max_files"), std::string::npos)
        << server.last_error();
  }
  {
    ::setenv("ARENARPC_CAPTURE", "/tmp/x,nonsense=3", 1);
    Server server;
    ASSERT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE));
    EXPECT_EQ(-1, server.Start("127.0.0.1:0", ServerOptions{}));
    EXPECT_NE(server.last_error().find("ARENARPC_CAPTURE"), std::string::npos);
    ::unsetenv("ARENARPC_CAPTURE");
  }
}

}  // namespace
}  // namespace arenarpc::capture_test
