// The quick start's server (docs/quickstart.md): one service, one method, every call's messages
// in the memory mode given on the command line.
//   greeter_server [ADDRESS [MODE]]   default 127.0.0.1:8010 heap; port 0 picks a free port
#include <atomic>
#include <cstdio>
#include <string>

#include "arenarpc/closure_guard.h"
#include "arenarpc/controller.h"
#include "arenarpc/server.h"
#include "greeter.pb.h"

namespace quickstart {

class GreeterImpl final : public Greeter {
 public:
  void SayHello(google::protobuf::RpcController* controller, const HelloRequest* request,
                HelloReply* reply, google::protobuf::Closure* done) override {
    arenarpc::ClosureGuard done_guard(done);  // sends the reply when this function returns
    if (request->name().empty()) {
      controller->SetFailed("name is empty");  // the caller sees Failed() and this text
      return;
    }
    reply->set_greeting("Hello, " + request->name() + "!");
    reply->set_calls(calls_.fetch_add(1) + 1);
  }

 private:
  std::atomic<int64_t> calls_{0};
};

}  // namespace quickstart

int main(int argc, char* argv[]) {
  const std::string address = argc > 1 ? argv[1] : "127.0.0.1:8010";
  quickstart::GreeterImpl greeter;
  arenarpc::Server server;
  if (server.AddService(&greeter, arenarpc::SERVER_DOESNT_OWN_SERVICE) != 0) {
    std::fprintf(stderr, "AddService: %s\n", server.last_error().c_str());
    return 1;
  }
  arenarpc::ServerOptions options;
  options.memory_mode = argc > 2 ? argv[2] : "auto";  // auto | heap | arena | paged | reuse
  if (server.Start(address, options) != 0) {
    std::fprintf(stderr, "Start: %s\n", server.last_error().c_str());
    return 1;
  }
  std::printf("greeter_server listening on port %d\n", server.listen_port());
  std::fflush(stdout);
  server.RunUntilAskedToQuit();  // until Ctrl-C or SIGTERM
  return 0;
}
