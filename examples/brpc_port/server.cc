// A brpc-style echo server, written as brpc's example/echo_c++ server is, ported to arenarpc.
// What changed from the brpc version: the includes (arenarpc/... for brpc/..., and
// arenarpc/log_macros.h for butil/logging.h) and the namespace (arenarpc:: for brpc::); LOG(INFO)
// is enabled with SetMinLogLevel (arenarpc logs from WARNING by default). Everything else —
// ClosureGuard, LOG(INFO) <<, SetFailed(code, fmt, ...), attachments with append(),
// ServerOptions, Start(port, &options), RunUntilAskedToQuit() — is brpc's shape.
// Prints "EchoServer is serving on port N" once it listens (--port=0 picks a free port).
#include <gflags/gflags.h>

#include <cerrno>
#include <cstdio>

#include "arenarpc/log_macros.h"
#include "arenarpc/server.h"
#include "echo.pb.h"

DEFINE_bool(echo_attachment, true, "Echo the request attachment as the response attachment");
DEFINE_int32(port, 8000, "TCP port of this server (0 = pick a free one)");
DEFINE_int32(idle_timeout_s, -1, "Close connections idle this long; -1 = never");
DEFINE_int32(max_concurrency, 0, "Limit of calls in flight; 0 = unlimited");

namespace example {

class EchoServiceImpl : public EchoService {
 public:
  void Echo(google::protobuf::RpcController* cntl_base, const EchoRequest* request,
            EchoResponse* response, google::protobuf::Closure* done) override {
    // Sends the reply on every path out of this function.
    arenarpc::ClosureGuard done_guard(done);
    arenarpc::Controller* cntl = static_cast<arenarpc::Controller*>(cntl_base);
    if (request->message().empty()) {
      cntl->SetFailed(EINVAL, "empty message from %s (log_id=%lld)", cntl->remote_side().c_str(),
                      static_cast<long long>(cntl->log_id()));
      return;
    }
    LOG(INFO) << "Received request[log_id=" << cntl->log_id() << "] from "
              << cntl->remote_side() << " to " << cntl->local_side() << ": "
              << request->message() << " (attached=" << cntl->request_attachment().to_string()
              << ")";
    response->set_message(request->message());
    if (FLAGS_echo_attachment) {
      // Shares the request's bytes, as butil::IOBuf::append(const IOBuf&) does.
      cntl->response_attachment().append(cntl->request_attachment());
    }
  }
};

}  // namespace example

int main(int argc, char* argv[]) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  arenarpc::SetMinLogLevel(arenarpc::LogLevel::kInfo);

  arenarpc::Server server;
  example::EchoServiceImpl echo_service_impl;
  // The server does not own the service: it lives on main's stack and outlives the server.
  if (server.AddService(&echo_service_impl, arenarpc::SERVER_DOESNT_OWN_SERVICE) != 0) {
    LOG(ERROR) << "Fail to add service: " << server.last_error();
    return -1;
  }
  arenarpc::ServerOptions options;
  options.idle_timeout_sec = FLAGS_idle_timeout_s;
  options.max_concurrency = FLAGS_max_concurrency;
  if (server.Start(FLAGS_port, &options) != 0) {
    LOG(ERROR) << "Fail to start EchoServer: " << server.last_error();
    return -1;
  }
  std::printf("EchoServer is serving on port %d\n", server.listen_port());
  std::fflush(stdout);
  // Until Ctrl-C / SIGTERM.
  server.RunUntilAskedToQuit();
  return 0;
}
