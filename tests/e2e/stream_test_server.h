#pragma once
// StreamTestServer: the server the real clients' tests call — TestService and StreamService
// (its unary method and ServerStream: CountingServerStream) on 127.0.0.1:<any>, in one strategy.

#include <string>

#include "arenarpc/grpc_stream.h"
#include "arenarpc/server.h"
#include "stream_unary.h"
#include "test_service.h"

namespace arenarpc::e2e {

class StreamTestServer {
 public:
  StreamTestServer() : streams_(StreamService::descriptor(), &unary_) {}
  ~StreamTestServer() {
    server_.Stop(0);
    server_.Join();
  }

  // "" once it listens, else why not.
  std::string Start(const ServerOptions& options) {
    std::string error;
    if (streams_.AddMethod("ServerStream", CountingServerStream, {}, &error) != 0) return error;
    if (server_.AddService(&echo_, SERVER_DOESNT_OWN_SERVICE) != 0 ||
        server_.AddService(&streams_, SERVER_DOESNT_OWN_SERVICE) != 0 ||
        server_.Start("127.0.0.1:0", options) != 0) {
      return server_.last_error();
    }
    return {};
  }
  Server& server() { return server_; }
  std::string port() const { return std::to_string(server_.listen_port()); }

 private:
  TestServiceImpl echo_;
  StreamUnary unary_;
  GrpcStreamService streams_;
  Server server_;
};

}  // namespace arenarpc::e2e
