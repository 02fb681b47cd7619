// Trace context end to end: what a client sends on each protocol reaches the handler's
// Controller, and a call the handler makes continues the trace (same trace id, the handler's span
// as its parent) over baidu_std and gRPC. Clients: arenarpc's Channel, curl, Python grpcio.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "../press/run_shell.h"
#include "arenarpc/channel.h"
#include "arenarpc/controller.h"
#include "arenarpc/rpcz.h"
#include "arenarpc/server.h"
#include "arenarpc/trace_context.h"
#include "e2e_test.pb.h"
#include "loopback_channel.h"

namespace arenarpc::e2e {
namespace {

std::string Hex(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

// "trace=<32 hex> span=<16 hex> parent=<16 hex> state=<tracestate>"
std::string Describe(const TraceContext& trace) {
  return "trace=" + Hex(trace.trace_id_high) + Hex(trace.trace_id) + " span=" +
         Hex(trace.span_id) + " parent=" + Hex(trace.parent_span_id) +
         " state=" + trace.tracestate;
}

// Echo answers with its Controller's trace; asked for "downstream", it first calls Echo2 through
// `downstream` with a fresh Controller and adds that call's own trace and Echo2's answer.
class TraceService : public TestService {
 public:
  Channel* downstream = nullptr;

  void Echo(google::protobuf::RpcController* controller, const TestRequest* request,
            TestResponse* response, google::protobuf::Closure* done) override {
    auto* cntl = static_cast<Controller*>(controller);
    response->set_message(Describe(cntl->trace()));
    if (request->message() == "downstream" && downstream != nullptr) {
      Controller call;
      TestRequest inner;
      inner.set_message("inner");
      TestResponse reply;
      TestService_Stub(downstream).Echo2(&call, &inner, &reply, nullptr);
      response->add_items(call.Failed() ? "failed: " + call.ErrorText() : Describe(call.trace()));
      response->add_items(reply.message());
    }
    done->Run();
  }
  void Echo2(google::protobuf::RpcController* controller, const TestRequest*,
             TestResponse* response, google::protobuf::Closure* done) override {
    response->set_message(Describe(static_cast<Controller*>(controller)->trace()));
    done->Run();
  }
};

class TraceContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.num_threads = 2;
    ASSERT_EQ(0, server_.AddService(&service_, SERVER_DOESNT_OWN_SERVICE));
    ASSERT_EQ(0, server_.Start("127.0.0.1:0", options)) << server_.last_error();
    port_ = server_.listen_port();
  }
  void TearDown() override { server_.Stop(0), server_.Join(); }

  std::unique_ptr<Channel> MakeChannel(const std::string& protocol) {
    return LoopbackChannel(port_, protocol);
  }

  // Calls Echo("downstream") with `trace` over `protocol`, the handler's downstream call over
  // `downstream_protocol`, and checks the three spans are one trace, parent to child.
  void ExpectOneTrace(const std::string& protocol, const std::string& downstream_protocol,
                      const TraceContext& trace, bool shared_span) {
    std::unique_ptr<Channel> downstream = MakeChannel(downstream_protocol);
    service_.downstream = downstream.get();
    std::unique_ptr<Channel> channel = MakeChannel(protocol);
    Controller cntl;
    cntl.set_trace(trace);
    TestRequest request;
    request.set_message("downstream");
    TestResponse response;
    TestService_Stub(channel.get()).Echo(&cntl, &request, &response, nullptr);
    ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
    service_.downstream = nullptr;
    // The server's span: baidu_std shares the client's span (brpc); W3C makes a child of it.
    const std::string ids = "trace=" + Hex(trace.trace_id_high) + Hex(trace.trace_id);
    ASSERT_EQ(0u, response.message().find(ids)) << response.message();
    const std::string server_span = response.message().substr(ids.size() + 6, 16);
    if (shared_span) {
      EXPECT_EQ(ids + " span=" + Hex(trace.span_id) + " parent=" + Hex(trace.parent_span_id) +
                    " state=" + trace.tracestate,
                response.message());
    } else {
      EXPECT_NE(Hex(trace.span_id), server_span);
      EXPECT_NE(std::string::npos, response.message().find(" parent=" + Hex(trace.span_id)))
          << response.message();
    }
    ASSERT_EQ(2, response.items_size());
    const std::string& client_side = response.items(0);  // the downstream call's Controller
    const std::string& server_side = response.items(1);  // what Echo2's handler saw
    EXPECT_EQ(0u, client_side.find(ids + " span=")) << client_side;
    EXPECT_NE(std::string::npos, client_side.find(" parent=" + server_span)) << client_side;
    EXPECT_EQ(std::string::npos, client_side.find(" span=" + server_span)) << client_side;
    const std::string child_span = client_side.substr(ids.size() + 6, 16);
    if (downstream_protocol == "baidu_std") {
      // brpc's 64-bit ids: the low half of the trace id, the same span, no tracestate.
      EXPECT_EQ("trace=" + Hex(0) + Hex(trace.trace_id) +
                    client_side.substr(ids.size(), client_side.find(" state=") - ids.size()) +
                    " state=",
                server_side);
    } else {
      EXPECT_EQ(0u, server_side.find(ids)) << server_side;
      EXPECT_NE(std::string::npos, server_side.find(" parent=" + child_span)) << server_side;
      EXPECT_NE(std::string::npos, server_side.find(" state=" + trace.tracestate)) << server_side;
    }
  }

  TraceService service_;
  Server server_;
  int port_ = 0;
};

TEST_F(TraceContextTest, BaiduStdCarriesBrpcsIdsAndTheHandlersCallsContinueThem) {
  TraceContext trace;
  trace.trace_id = 0x1234;
  trace.span_id = 0x5678;
  trace.parent_span_id = 0x9abc;
  ExpectOneTrace("baidu_std", "baidu_std", trace, /*shared_span=*/true);
}

TEST_F(TraceContextTest, GrpcCarriesTraceparentAndTracestateAcrossProtocols) {
  TraceContext trace = TraceContext::NewRoot();
  trace.tracestate = "congo=t61rcWkgMzE";
  ExpectOneTrace("grpc", "grpc", trace, /*shared_span=*/false);
  ExpectOneTrace("grpc", "baidu_std", trace, /*shared_span=*/false);
}

TEST_F(TraceContextTest, ACallWithoutATraceStartsNone) {
  // Even when rpcz samples every call: a span's own ids are never sent.
  const int budget = RpczSpansPerSecond();
  SetRpczSpansPerSecond(100000);
  std::unique_ptr<Channel> channel = MakeChannel("baidu_std");
  service_.downstream = channel.get();
  Controller cntl;
  TestRequest request;
  request.set_message("downstream");
  TestResponse response;
  TestService_Stub(channel.get()).Echo(&cntl, &request, &response, nullptr);
  service_.downstream = nullptr;
  ASSERT_FALSE(cntl.Failed()) << cntl.ErrorText();
  const std::string none = Describe(TraceContext());
  EXPECT_EQ(none, response.message());
  ASSERT_EQ(2, response.items_size());
  EXPECT_EQ(none, response.items(0));
  EXPECT_EQ(none, response.items(1));
  SetRpczSpansPerSecond(budget);
}

TEST_F(TraceContextTest, CurlsTraceparentAndBrpcsHttpHeadersReachTheHandler) {
  const std::string curl = "/usr/bin/curl -sS --max-time 10 -H 'Content-Type: application/json' "
                           "--data '{\"message\":\"m\"}' ";
  const std::string url =
      "http://127.0.0.1:" + std::to_string(port_) + "/arenarpc.e2e.TestService/Echo";
  press::ShellOutput out = press::RunShell(
      curl + "-H 'traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' "
             "-H 'tracestate: rojo=00f067aa0ba902b7' " + url);
  ASSERT_EQ(0, out.exit_code) << out.out;
  EXPECT_NE(std::string::npos, out.out.find("trace=4bf92f3577b34da6a3ce929d0e0e4736 span="))
      << out.out;
  EXPECT_NE(std::string::npos,
            out.out.find("parent=00f067aa0ba902b7 state=rojo=00f067aa0ba902b7"))
      << out.out;
  out = press::RunShell(curl + "-H 'x-bd-trace-id: 255' -H 'x-bd-span-id: 16' " + url);
  ASSERT_EQ(0, out.exit_code) << out.out;
  EXPECT_NE(std::string::npos,
            out.out.find("trace=000000000000000000000000000000ff span=0000000000000010 "
                         "parent=0000000000000000"))
      << out.out;
  out = press::RunShell(curl + "-H 'traceparent: 00-not-a-trace' " + url);  // ignored
  EXPECT_NE(std::string::npos, out.out.find("trace=" + std::string(32, '0'))) << out.out;
}

TEST_F(TraceContextTest, PythonGrpcioTraceparentReachesTheHandler) {
  // TestRequest{message: "m"} and the reply's field 1, by hand: no generated module needed.
  const std::string script =
      "import grpc, sys\n"
      "ch = grpc.insecure_channel('127.0.0.1:" + std::to_string(port_) + "')\n"
      "echo = ch.unary_unary('/arenarpc.e2e.TestService/Echo')\n"
      "reply = echo(b'\\x0a\\x01m', timeout=10, metadata=(('traceparent', "
      "'00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'),))\n"
      "assert reply[0] == 0x0a\n"
      "print(reply[2:2 + reply[1]].decode())\n";
  const press::ShellOutput out =
      press::RunShell("timeout 60 /usr/bin/python3 -c \"$(cat <<'PY'\n" + script + "PY\n)\"");
  ASSERT_EQ(0, out.exit_code) << out.out;
  EXPECT_NE(std::string::npos, out.out.find("trace=0af7651916cd43dd8448eb211c80319c span="))
      << out.out;
  EXPECT_NE(std::string::npos, out.out.find("parent=b7ad6b7169203331 state=\n")) << out.out;
}

}  // namespace
}  // namespace arenarpc::e2e
