// A brpc-style echo client, written as brpc's example/echo_c++ client (synchronous calls) and
// asynchronous_echo_c++ client (NewCallback) are, ported to arenarpc. As for server.cc, only the
// includes, the namespace and the logging differ from brpc's; and brpc's client loops until
// IsAskedToQuit(), this one makes --count calls (arenarpc has no IsAskedToQuit()).
// Exits 0 if every call succeeded.
#include <gflags/gflags.h>

#include <cstdio>
#include <memory>

#include "arenarpc/channel.h"
#include "echo.pb.h"

DEFINE_string(attachment, "", "Carry this along with requests");
DEFINE_string(protocol, "baidu_std", "Protocol type (arenarpc speaks baidu_std only)");
DEFINE_string(connection_type, "", "Connection type: single, pooled or short (empty = single)");
// brpc's default is 0.0.0.0:8000; Channel::Init rejects 0.0.0.0 (not an address to connect to).
DEFINE_string(server, "127.0.0.1:8000", "IP address of the server");
DEFINE_string(load_balancer, "",
              "The algorithm for load balancing (rr, random, wrr, c_murmurhash, la; --server is "
              "then a naming URL such as list://a:1,b:2); empty = one server");
DEFINE_int32(timeout_ms, 100, "RPC timeout in milliseconds");
DEFINE_int32(max_retry, 3, "Max retries (not including the first RPC)");
DEFINE_int32(count, 3, "Synchronous calls to make, then one asynchronous call");

namespace {

int g_failures = 0;  // written by the async done, read by main after Join()

// The async call's done: owns the controller and the response (brpc's pattern).
void HandleEchoResponse(arenarpc::Controller* cntl, example::EchoResponse* response) {
  std::unique_ptr<arenarpc::Controller> cntl_guard(cntl);
  std::unique_ptr<example::EchoResponse> response_guard(response);
  if (cntl->Failed()) {
    std::fprintf(stderr, "Fail to send EchoRequest (async), %s\n", cntl->ErrorText().c_str());
    ++g_failures;
    return;
  }
  std::printf("async response from %s: %s (attached=%s) latency=%lldus\n",
              cntl->remote_side().c_str(), response->message().c_str(),
              cntl->response_attachment().to_string().c_str(),
              static_cast<long long>(cntl->latency_us()));
}

}  // namespace

int main(int argc, char* argv[]) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);

  // A Channel represents a communication line to a server; thread-safe, shareable.
  arenarpc::Channel channel;
  arenarpc::ChannelOptions options;
  options.protocol = FLAGS_protocol;
  if (!FLAGS_connection_type.empty()) options.connection_type = FLAGS_connection_type;
  options.timeout_ms = FLAGS_timeout_ms /*milliseconds*/;
  options.max_retry = FLAGS_max_retry;
  if (channel.Init(FLAGS_server.c_str(), FLAGS_load_balancer.c_str(), &options) != 0) {
    std::fprintf(stderr, "Fail to initialize channel: %s\n", channel.last_error().c_str());
    return -1;
  }
  // Stubs are cheap; they wrap the channel.
  example::EchoService_Stub stub(&channel);

  int log_id = 0;
  for (int i = 0; i < FLAGS_count; ++i) {
    example::EchoRequest request;
    example::EchoResponse response;
    arenarpc::Controller cntl;
    request.set_message("hello world");
    cntl.set_log_id(log_id++);  // set by user
    // The attachment travels after the serialized request, uncompressed.
    cntl.request_attachment().append(FLAGS_attachment);
    // done == nullptr: waits for the response or an error.
    stub.Echo(&cntl, &request, &response, nullptr);
    if (cntl.Failed()) {
      std::fprintf(stderr, "%s\n", cntl.ErrorText().c_str());
      ++g_failures;
      continue;
    }
    std::printf("response from %s: %s (attached=%s) latency=%lldus\n",
                cntl.remote_side().c_str(), response.message().c_str(),
                cntl.response_attachment().to_string().c_str(),
                static_cast<long long>(cntl.latency_us()));
  }

  // Asynchronous: the done (from NewCallback) deletes the controller and the response.
  auto* response = new example::EchoResponse();
  auto* cntl = new arenarpc::Controller();
  example::EchoRequest request;
  request.set_message("hello async world");
  cntl->set_log_id(log_id++);
  cntl->request_attachment().append(FLAGS_attachment);
  // Copied before the call: done may delete cntl before Echo() returns.
  const arenarpc::CallId cid = cntl->call_id();
  google::protobuf::Closure* done = arenarpc::NewCallback(&HandleEchoResponse, cntl, response);
  stub.Echo(cntl, &request, response, done);
  arenarpc::Join(cid);  // waits until HandleEchoResponse returned

  std::printf("EchoClient is going to quit (%d failures)\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
