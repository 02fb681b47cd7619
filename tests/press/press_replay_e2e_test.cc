// arenarpc_press --replay: a dump captured by one server (a call per protocol) is played against
// another, which receives the same request bytes over each protocol; a damaged dump file is
// reported with its offset and the rest still plays; --replay_check finds no difference against
// a deterministic handler.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "arenarpc/channel.h"
#include "arenarpc/controller.h"
#include "arenarpc/server.h"
#include "capture/request_capture.h"
#include "http_client.h"
#include "recording_service.h"
#include "run_shell.h"
#include "server/server_access.h"

namespace arenarpc::press {
namespace {

using capture_test::RecordingService;

class Recorder {
 public:
  explicit Recorder(CaptureOptions capture = {}) {
    ServerOptions options;
    options.num_threads = 2;
    options.capture = std::move(capture);
    EXPECT_EQ(0, server_.AddService(&service_, SERVER_DOESNT_OWN_SERVICE));
    EXPECT_EQ(0, server_.Start("127.0.0.1:0", options)) << server_.last_error();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(server_.listen_port()); }
  Server& server() { return server_; }
  RecordingService& service() { return service_; }

 private:
  RecordingService service_;
  Server server_;
};

void Echo(const std::string& address, const char* protocol, const std::string& message,
          const std::string& attachment) {
  ChannelOptions options;
  options.protocol = protocol;
  Channel channel;
  ASSERT_EQ(0, channel.Init(address.c_str(), &options));
  e2e::TestRequest request;
  request.set_message(message);
  request.add_items("item");
  e2e::TestResponse response;
  Controller cntl;
  cntl.request_attachment().Append(attachment);
  e2e::TestService_Stub(&channel).Echo(&cntl, &request, &response, nullptr);
  ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
}

// A fresh (empty) temporary directory of this process.
std::filesystem::path FreshDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("arenarpc_press_replay_" + name + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

// POSTs an HTTP+JSON Echo call and expects 200.
void PostJsonEcho(int port, const std::string& body) {
  e2e::HttpClient http(port);
  ASSERT_TRUE(http.Send("POST /arenarpc.e2e.TestService/Echo HTTP/1.1\r\nHost: t\r\n"
                        "Content-Type: application/json\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n" + body));
  auto reply = http.Read();
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->status, 200);
}

TEST(PressReplay, ReplaysEachProtocolsBytesAndSkipsDamage) {
  const auto dir = FreshDir("");
  std::set<std::string> captured;
  {
    CaptureOptions capture;
    capture.directory = dir.string();
    Recorder source(capture);
    Echo(source.address(), "baidu_std", "by baidu_std", "with attachment");
    PostJsonEcho(source.server().listen_port(), R"({"message":"by http","items":["a"]})");
    Echo(source.address(), "grpc", "by grpc", "");
    ASSERT_TRUE(internal::ServerAccess::Capture(source.server())->writer().Flush(
        std::chrono::seconds(10)));
    const auto received = source.service().received();
    captured.insert(received.begin(), received.end());
    ASSERT_EQ(captured.size(), 3u);
  }
  // A damaged file next to the good one: 5 bytes of garbage, then the good file's records, then
  // the first 20 bytes of a record (cut short).
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    files.push_back(entry.path().string());
  }
  ASSERT_EQ(files.size(), 1u);
  std::ifstream in(files[0], std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream((dir / "requests.99999999_999999_999999").string(), std::ios::binary)
      << "junk!" << good << good.substr(0, 20);

  Recorder target;
  const ShellOutput run = RunShell(std::string(PRESS_BIN) + " --server " + target.address() +
                                   " --replay " + dir.string() +
                                   " --replay_check --concurrency 2 --warmup_s 0 --duration_s 1"
                                   " --server_vars=false");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("requests.99999999_999999_999999: offset 0: no record magic"),
            std::string::npos)
      << run.out;
  const std::string truncated_at = "offset " + std::to_string(5 + good.size()) + ": truncated";
  EXPECT_NE(run.out.find(truncated_at), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("[replay] records: 6 (baidu_std 2, grpc 2, http 2)"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("[replay] differences total: 0"), std::string::npos) << run.out;
  // Every byte string the first server received reached the second, over each protocol.
  const auto replayed = target.service().received();
  EXPECT_GT(replayed.size(), 6u);
  const std::set<std::string> distinct(replayed.begin(), replayed.end());
  EXPECT_EQ(distinct, captured);
  std::filesystem::remove_all(dir);
}

TEST(PressReplay, ForcedProtocolAndBadInput) {
  const auto dir = FreshDir("forced_");
  std::string captured;
  {
    CaptureOptions capture;
    capture.directory = dir.string();
    Recorder source(capture);
    Echo(source.address(), "grpc", "captured over grpc", "");
    ASSERT_TRUE(internal::ServerAccess::Capture(source.server())->writer().Flush(
        std::chrono::seconds(10)));
    captured = source.service().received().at(0);
  }
  Recorder target;
  const ShellOutput run = RunShell(std::string(PRESS_BIN) + " --server " + target.address() +
                                   " --replay " + dir.string() + " --replay_protocol baidu_std"
                                   " --concurrency 1 --warmup_s 0 --duration_s 0.5"
                                   " --server_vars=false");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("[replay] records: 1 (baidu_std 1)"), std::string::npos) << run.out;
  const auto replayed = target.service().received();
  ASSERT_FALSE(replayed.empty());
  EXPECT_EQ(replayed.front(), captured);

  const ShellOutput bad = RunShell(std::string(PRESS_BIN) + " --server " + target.address() +
                                   " --replay " + dir.string() + " --replay_protocol smtp --concurrency 1");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("--replay_protocol 'smtp' is not baidu_std, http or grpc"),
            std::string::npos)
      << bad.out;
  const ShellOutput empty = RunShell(std::string(PRESS_BIN) + " --server " + target.address() +
                                     " --replay /nonexistent_dump_dir_for_test --concurrency 1");
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.out.find("/nonexistent_dump_dir_for_test"), std::string::npos) << empty.out;
  std::filesystem::remove_all(dir);
}

// An HTTP+JSON record forced onto baidu_std or gRPC: refused without the .proto, sent as its
// binary message with --proto (the handler gets the bytes the HTTP call's handler got); a --proto
// without the record's method is refused by name.
TEST(PressReplay, HttpJsonRecordsForcedOntoBinaryProtocolsWithTheirProto) {
  const auto dir = FreshDir("json_");
  std::string captured;
  {
    CaptureOptions capture;
    capture.directory = dir.string();
    Recorder source(capture);
    PostJsonEcho(source.server().listen_port(),
                 R"({"message":"json to binary","items":["a","b"]})");
    ASSERT_TRUE(internal::ServerAccess::Capture(source.server())->writer().Flush(
        std::chrono::seconds(10)));
    captured = source.service().received().at(0);
  }
  const std::string press = std::string(PRESS_BIN) + " --replay " + dir.string() +
                            " --concurrency 1 --warmup_s 0 --duration_s 0.3 --server_vars=false";
  {
    Recorder target;
    const ShellOutput refused =
        RunShell(press + " --server " + target.address() + " --replay_protocol baidu_std");
    EXPECT_EQ(refused.exit_code, 2) << refused.out;
    EXPECT_NE(refused.out.find("offset 0: an HTTP+JSON request cannot be sent over baidu_std "
                               "without its .proto (give it with --proto)"),
              std::string::npos)
        << refused.out;
    EXPECT_TRUE(target.service().received().empty());
  }
  for (const char* protocol : {"baidu_std", "grpc"}) {
    Recorder target;
    const ShellOutput run = RunShell(press + " --server " + target.address() +
                                     " --replay_protocol " + protocol + " --proto " E2E_PROTO
                                     " --replay_check");
    EXPECT_EQ(run.exit_code, 0) << run.out;
    EXPECT_NE(run.out.find(std::string("[replay] records: 1 (") + protocol + " 1)"),
              std::string::npos)
        << run.out;
    EXPECT_NE(run.out.find("[replay] differences total: 0"), std::string::npos) << run.out;
    const auto replayed = target.service().received();
    ASSERT_FALSE(replayed.empty()) << protocol;
    for (const std::string& bytes : replayed) EXPECT_EQ(bytes, captured) << protocol;
  }
  // A .proto that does not declare the record's method.
  const auto other = dir / "other.proto";
  std::ofstream(other.string()) << "syntax = \"proto3\";\npackage x;\nmessage M {}\n"
                                   "service S { rpc Call(M) returns (M); }\n";
  Recorder target;
  const ShellOutput wrong = RunShell(press + " --server " + target.address() +
                                     " --replay_protocol grpc --proto " + other.string());
  EXPECT_EQ(wrong.exit_code, 2) << wrong.out;
  EXPECT_NE(wrong.out.find("--proto declares no method arenarpc.e2e.TestService.Echo"),
            std::string::npos)
      << wrong.out;
  const ShellOutput with_method = RunShell(press + " --server " + target.address() +
                                           " --proto " E2E_PROTO
                                           " --method arenarpc.e2e.TestService.Echo");
  EXPECT_EQ(with_method.exit_code, 2) << with_method.out;
  EXPECT_NE(with_method.out.find("not --method or --input"), std::string::npos) << with_method.out;
  std::filesystem::remove_all(dir);
}

// --replay_replies_out keeps the first pass's replies; --replay_replies_in compares another run's
// replies with them (bench/memlab), finds a changed reply, and refuses the replies of another dump.
TEST(PressReplay, RepliesFileComparesAnotherRun) {
  const auto dir = FreshDir("replies_");
  {
    CaptureOptions capture;
    capture.directory = (dir / "dump").string();
    Recorder source(capture);
    Echo(source.address(), "baidu_std", "kept reply", "");
    ASSERT_TRUE(internal::ServerAccess::Capture(source.server())->writer().Flush(
        std::chrono::seconds(10)));
  }
  Recorder target;
  const std::string replies = (dir / "replies").string();
  const std::string press = std::string(PRESS_BIN) + " --server " + target.address() +
                            " --replay " + (dir / "dump").string() +
                            " --concurrency 1 --warmup_s 0 --duration_s 0.3 --server_vars=false";
  const ShellOutput first = RunShell(press + " --replay_check --replay_replies_out=" + replies);
  EXPECT_EQ(first.exit_code, 0) << first.out;
  std::ifstream in(replies, std::ios::binary);
  std::string saved((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(saved.rfind("arenarpc_replies 1 1\n1 ", 0), 0u) << saved;

  const ShellOutput same = RunShell(press + " --replay_check --replay_replies_in=" + replies);
  EXPECT_EQ(same.exit_code, 0) << same.out;
  EXPECT_EQ(same.out.find("[replay] first pass"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("[replay] differences total: 0"), std::string::npos) << same.out;

  // The kept reply's last byte changed: every reply of the run now differs from it.
  std::string changed = saved;
  changed.back() = static_cast<char>(changed.back() ^ 0x5a);
  std::ofstream(replies, std::ios::binary | std::ios::trunc) << changed;
  const ShellOutput differs = RunShell(press + " --replay_check --replay_replies_in=" + replies);
  EXPECT_NE(differs.out.find("[replay] differences arenarpc.e2e.TestService.Echo: "),
            std::string::npos)
      << differs.out;
  EXPECT_EQ(differs.out.find("[replay] differences total: 0"), std::string::npos) << differs.out;

  std::ofstream(replies, std::ios::binary | std::ios::trunc) << "arenarpc_replies 1 2\n";
  const ShellOutput other = RunShell(press + " --replay_check --replay_replies_in=" + replies);
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.out.find("holds the replies to 2 records, the dump has 1"), std::string::npos)
      << other.out;
  const ShellOutput unchecked = RunShell(press + " --replay_replies_in=" + replies);
  EXPECT_EQ(unchecked.exit_code, 2);
  EXPECT_NE(unchecked.out.find("need --replay_check"), std::string::npos) << unchecked.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace arenarpc::press
