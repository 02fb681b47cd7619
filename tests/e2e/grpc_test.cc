// gRPC over HTTP/2 on the arenarpc port, called by Python grpcio (grpc_python_client.py): unary
// echo, status mapping, metadata, deadline, cancellation by RST_STREAM, a message over the limit,
// gzip both ways, many concurrent calls on one connection, the health service — in every memory
// strategy. Then GOAWAY on Stop with a call in flight. Streaming methods (GrpcStreamService,
// grpc_stream_python_client.py): all three kinds, metadata and status, cancellation mid-stream, a
// deadline, a client that stops reading, a flooding client stream, concurrent streams.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "../press/run_shell.h"
#include "../press/temp_dir.h"
#include "arenarpc/fiber.h"
#include "arenarpc/grpc_stream.h"
#include "grpc_stream_test.pb.h"
#include "server_fixture.h"
#include "stream_unary.h"

namespace arenarpc::e2e {
namespace {

constexpr size_t kMaxBody = 256u << 10;

// e2e_test_pb2.py, generated once per test binary run in a directory removed at exit.
const std::string& PythonModuleDir() {
  static const press::TempDir temp;
  static const std::string dir = [] {
    const std::string& made = temp.path();
    const press::ShellOutput protoc = press::RunShell(
        "/usr/bin/protoc --python_out=" + made + " -I" ARENARPC_SOURCE_DIR
        "/tests/e2e e2e_test.proto grpc_stream_test.proto");
    return protoc.exit_code == 0 ? made : std::string();
  }();
  return dir;
}

class GrpcTest : public ServerTest {};

TEST_P(GrpcTest, PythonGrpcioClient) {
  ServerOptions options;
  options.max_body_size = kMaxBody;
  StartServer(options);
  ASSERT_FALSE(PythonModuleDir().empty());
  const press::ShellOutput run = press::RunShell(
      "timeout 120 /usr/bin/python3 " ARENARPC_SOURCE_DIR "/tests/e2e/grpc_python_client.py " +
      std::to_string(port_) + " " + PythonModuleDir() + " " + std::to_string(kMaxBody));
  const std::string& output = run.out;
  EXPECT_EQ(0, run.exit_code) << output;
  for (const char* name :
       {"unary", "metadata", "handler_error", "unimplemented", "grpc_message_percent_encoded",
        "status_details", "deflate_request", "unparsable_request",
        "deadline_exceeded", "cancellation", "message_over_limit", "gzip",
        "concurrent_calls_one_connection", "health_check"}) {
    EXPECT_NE(std::string::npos, output.find(std::string("OK ") + name + "\n"))
        << name << "\n" << output;
  }
  // The good calls and the refused ones were counted as gRPC, not as malformed input.
  EXPECT_EQ(0u, server_->GetServerStats().malformed_frames);
}

// 4 MiB and 16 MiB messages both ways (past the 4 MiB stream window: the server's windows reopen
// as the bytes arrive), and eight 4 MiB requests at once on one connection.
TEST_P(GrpcTest, PythonGrpcioLargeMessages) {
  ServerOptions options;
  options.max_body_size = 32u << 20;
  StartServer(options);
  ASSERT_FALSE(PythonModuleDir().empty());
  const press::ShellOutput run = press::RunShell(
      "timeout 120 /usr/bin/python3 " ARENARPC_SOURCE_DIR "/tests/e2e/grpc_python_client.py " +
      std::to_string(port_) + " " + PythonModuleDir() + " " + std::to_string(32u << 20) +
      " large");
  EXPECT_EQ(0, run.exit_code) << run.out;
  for (const char* name : {"message_4mib", "message_16mib"}) {
    EXPECT_NE(std::string::npos, run.out.find(std::string("OK ") + name + "\n"))
        << name << "\n" << run.out;
  }
  EXPECT_EQ(std::string::npos, run.out.find("OK unary")) << run.out;  // only the large cases
}

INSTANTIATE_TEST_SUITE_P(Modes, GrpcTest, ::testing::ValuesIn(kAllModes));

// --- streaming methods

constexpr size_t kMaxBufferedBytes = 256u << 10;  // GrpcStreamMethodOptions of Push

struct PushCounters {
  std::atomic<int> ended{0}, canceled{0}, blocked{0};
  fiber::Event stop_stream_open;           // the "stop" Push wrote its first message
  std::atomic<bool> stopping{false};       // Server::Stop() began
  std::atomic<int> written_while_stopping{0};
  std::atomic<int64_t> bytes_before_block{0};  // the largest, over the calls that blocked
};

void FillReply(const StreamRequest& request, int index, StreamReply* reply) {
  reply->set_text(request.text());
  reply->set_index(index);
  reply->mutable_items()->CopyFrom(request.items());
  if (request.bytes() > 0) reply->set_payload(std::string(request.bytes(), 'p'));
}

void AddStreamMethods(GrpcStreamService& streams, PushCounters& push) {
  std::string error;
  ASSERT_EQ(0, streams.AddMethod("ServerStream", [](GrpcServerStream& stream) {
    GrpcStreamMessages in;
    if (!stream.Read(&in)) return;
    const auto& request = in.request<StreamRequest>();
    auto& fields = stream.controller().request_user_fields();
    if (auto it = fields.find("x-user"); it != fields.end()) {
      stream.controller().response_user_fields()["x-stream"] = it->second + "-back";
    }
    for (int i = 0; i < request.count(); ++i) {
      GrpcStreamMessages out = stream.NewMessages();
      FillReply(request, i, &out.response<StreamReply>());
      if (!stream.Write(std::move(out))) return;
      if (request.delay_ms() > 0) fiber::SleepFor(std::chrono::milliseconds(request.delay_ms()));
    }
    if (request.fail_code() != 0) {
      stream.AddTrailingMetadata("x-trailer", "t");
      stream.controller().SetFailed(request.fail_code(), request.text());
    }
  }, {}, &error)) << error;
  ASSERT_EQ(0, streams.AddMethod("arenarpc.e2e.StreamService.ClientStream",
                                 [](GrpcServerStream& stream) {
    GrpcStreamMessages in;
    std::string joined;
    int count = 0;
    while (stream.Read(&in)) {
      const auto& request = in.request<StreamRequest>();
      if (request.delay_ms() > 0) fiber::SleepFor(std::chrono::milliseconds(request.delay_ms()));
      joined += (count++ == 0 ? "" : ",") + request.text().substr(0, 8);
    }
    if (stream.controller().IsCanceled()) return;
    GrpcStreamMessages out = stream.NewMessages();
    out.response<StreamReply>().set_text(joined);
    out.response<StreamReply>().set_index(count);
    stream.Write(std::move(out));
  }, {}, &error)) << error;
  ASSERT_EQ(0, streams.AddMethod("Bidi", [](GrpcServerStream& stream) {
    GrpcStreamMessages messages;
    for (int i = 0; stream.Read(&messages); ++i) {
      if (i == 0 && messages.request<StreamRequest>().text().starts_with("z")) {
        stream.controller().set_response_compress_type(COMPRESS_TYPE_GZIP);
      }
      FillReply(messages.request<StreamRequest>(), i, &messages.response<StreamReply>());
      if (!stream.Write(std::move(messages))) return;
    }
  }, {}, &error)) << error;
  GrpcStreamMethodOptions push_options;
  push_options.max_buffered_bytes = kMaxBufferedBytes;
  ASSERT_EQ(0, streams.AddMethod("Push", [&push](GrpcServerStream& stream) {
    GrpcStreamMessages in;
    if (stream.Read(&in)) {
      const auto& request = in.request<StreamRequest>();
      int64_t written = 0;
      bool blocked = false;
      for (int i = 0; request.count() < 0 || i < request.count(); ++i) {
        GrpcStreamMessages out = stream.NewMessages();
        FillReply(request, i, &out.response<StreamReply>());
        int rc = stream.TryWrite(&out);
        if (rc == EAGAIN) {
          if (!blocked) {
            blocked = true;
            push.blocked.fetch_add(1);
            int64_t seen = push.bytes_before_block.load();
            while (written > seen && !push.bytes_before_block.compare_exchange_weak(seen, written)) {
            }
          }
          rc = stream.WaitWritable(std::chrono::steady_clock::now() + std::chrono::seconds(20));
          if (rc == 0) rc = stream.TryWrite(&out);
        }
        if (rc != 0) break;
        if (request.text() == "stop") {
          push.stop_stream_open.Set();
          if (push.stopping.load()) push.written_while_stopping.fetch_add(1);
        }
        written += request.bytes();
        if (request.delay_ms() > 0) fiber::SleepFor(std::chrono::milliseconds(request.delay_ms()));
      }
    }
    if (stream.controller().IsCanceled()) push.canceled.fetch_add(1);
    push.ended.fetch_add(1);
  }, push_options, &error)) << error;
  EXPECT_EQ(-1, streams.AddMethod("Unary", [](GrpcServerStream&) {}, {}, &error));
  EXPECT_NE(std::string::npos, error.find("not a streaming rpc")) << error;
  EXPECT_EQ(-1, streams.AddMethod("Nope", [](GrpcServerStream&) {}, {}, &error));
}

class GrpcStreamTest : public ::testing::TestWithParam<const char*> {};

// heap: every case; the other strategies: the cases that compare reply bytes.
TEST_P(GrpcStreamTest, PythonGrpcioStreams) {
  const bool all_cases = std::string_view(GetParam()) == "heap";
  StreamUnary unary;
  GrpcStreamService streams(StreamService::descriptor(), &unary);
  PushCounters push;
  AddStreamMethods(streams, push);
  ServerOptions options;
  options.memory_mode = GetParam();
  options.num_threads = 2;
  options.max_body_size = kMaxBody;
  options.stop_deadline = std::chrono::milliseconds(500);
  options.max_request_memory = 64u << 10;
  // client_stream_flood checks that flow control holds the client back while the handler reads
  // nothing: a 64 KiB window (the default, 4 MiB, would take the whole flood of 4 MiB at once).
  options.http2_stream_window = 65535;
  Server server;
  ASSERT_EQ(0, server.AddService(&streams, SERVER_DOESNT_OWN_SERVICE)) << server.last_error();
  ASSERT_EQ(0, server.Start("127.0.0.1:0", options)) << server.last_error();
  {  // baidu_std: the unary method is served, a streaming one is not
    Channel channel;
    ChannelOptions channel_options;
    channel_options.timeout_ms = 10000;
    ASSERT_EQ(0, channel.Init("127.0.0.1:" + std::to_string(server.listen_port()), &channel_options));
    StreamService_Stub stub(&channel);
    StreamRequest request;
    request.set_text("b");
    StreamReply reply;
    Controller unary_controller;
    stub.Unary(&unary_controller, &request, &reply, nullptr);
    EXPECT_FALSE(unary_controller.Failed()) << unary_controller.ErrorText();
    EXPECT_EQ("b", reply.text());
    Controller stream_controller;
    stub.ServerStream(&stream_controller, &request, &reply, nullptr);
    EXPECT_EQ(ENOMETHOD, stream_controller.ErrorCode()) << stream_controller.ErrorText();
  }
  ASSERT_FALSE(PythonModuleDir().empty());
  std::thread stopper([&] {  // the client's last case: Stop() with a stream open
    if (!all_cases || !push.stop_stream_open.WaitFor(std::chrono::seconds(60))) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    push.stopping.store(true);
    server.Stop();
  });
  const press::ShellOutput run = press::RunShell(
      "timeout 120 /usr/bin/python3 " ARENARPC_SOURCE_DIR "/tests/e2e/grpc_stream_python_client.py " +
      std::to_string(server.listen_port()) + " " + PythonModuleDir() + (all_cases ? "" : " bytes"));
  stopper.join();
  const std::string& output = run.out;
  EXPECT_EQ(0, run.exit_code) << output;
  // Every strategy: the replies' bytes (the client compares them with its own serialization).
  for (const char* name :
       {"server_stream", "server_stream_metadata_and_status", "client_stream", "bidi"}) {
    EXPECT_NE(std::string::npos, output.find(std::string("OK ") + name + "\n"))
        << name << "\n" << output;
  }
  if (!all_cases) {
    server.Stop();
    server.Join();
    for (const char* name : {"arenarpc.e2e.StreamService.ServerStream",
                             "arenarpc.e2e.StreamService.Bidi"}) {
      const MethodStats stats = server.GetMethodStats(name);
      EXPECT_GT(stats.memory.acquired, 1u) << name;
      EXPECT_EQ(stats.memory.acquired, stats.memory.released) << name;
    }
    return;
  }
  for (const char* name :
       {"unary_method_of_a_stream_service", "server_stream_empty", "cancel_mid_stream", "deadline",
        "client_stops_reading", "client_stream_flood", "concurrent_streams_one_connection",
        "client_stream_message_over_max_request_memory", "bidi_gzip",
        "stop_with_a_stream_open"}) {
    EXPECT_NE(std::string::npos, output.find(std::string("OK ") + name + "\n"))
        << name << "\n" << output;
  }
  // Push ran four times (cancel, deadline, the reader that stopped, Stop()), canceled each time.
  EXPECT_EQ(4, push.ended.load()) << output;
  EXPECT_EQ(4, push.canceled.load()) << output;
  // The stream open at Stop() went on after the GOAWAY (10 ms a message, stop_deadline 0.5 s).
  EXPECT_GT(push.written_while_stopping.load(), 10) << output;
  // The stalled reader: the writer met the bound, after the client's windows and the stream's
  // max_buffered_bytes took what they could (grpcio's windows grow to a few MiB: BDP probing).
  EXPECT_EQ(1, push.blocked.load()) << output;
  EXPECT_LT(push.bytes_before_block.load(), int64_t{16} << 20) << output;
  std::cout << "Push wrote " << push.bytes_before_block.load()
            << " bytes before its writer met the bound\n" << output;
  EXPECT_EQ(0u, server.GetServerStats().malformed_frames);
  server.Stop();
  server.Join();
  for (const char* name : {"arenarpc.e2e.StreamService.ServerStream",
                           "arenarpc.e2e.StreamService.ClientStream",
                           "arenarpc.e2e.StreamService.Bidi", "arenarpc.e2e.StreamService.Push"}) {
    const MethodStats stats = server.GetMethodStats(name);
    EXPECT_GT(stats.memory.acquired, 1u) << name;
    EXPECT_EQ(stats.memory.acquired, stats.memory.released) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, GrpcStreamTest,
                         ::testing::Values("heap", "arena", "paged", "reuse", "auto"));

}  // namespace
}  // namespace arenarpc::e2e
