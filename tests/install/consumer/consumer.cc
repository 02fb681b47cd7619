// Installed arenarpc, baidu_std: a server in the reuse strategy (arena for one method) and a
// channel calling it over loopback. Exit status 0 only if the reply is the expected one.
#include <cstdio>
#include <string>

#include "arenarpc/channel.h"
#include "arenarpc/controller.h"
#include "arenarpc/server.h"
#include "proto/hello.pb.h"

namespace {

class Hello final : public consumer::HelloService {
 public:
  void Say(google::protobuf::RpcController*, const consumer::HelloRequest* request,
           consumer::HelloReply* reply, google::protobuf::Closure* done) override {
    reply->set_text("hello " + request->name());
    reply->mutable_tags()->CopyFrom(request->tags());
    done->Run();
  }
};

int Fail(const std::string& what) {
  std::fprintf(stderr, "consumer: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main() {
  Hello service;
  arenarpc::Server server;
  if (server.AddService(&service, arenarpc::SERVER_DOESNT_OWN_SERVICE) != 0) {
    return Fail(server.last_error());
  }
  arenarpc::ServerOptions options;
  options.num_threads = 1;
  options.memory_mode = "reuse";
  options.method_memory_mode["consumer.HelloService.Say"] = "arena";
  if (server.Start("127.0.0.1:0", options) != 0) return Fail(server.last_error());

  arenarpc::Channel channel;
  if (channel.Init("127.0.0.1:" + std::to_string(server.listen_port()), nullptr) != 0) {
    return Fail(channel.last_error());
  }
  consumer::HelloService_Stub stub(&channel);
  for (int i = 0; i < 3; ++i) {
    consumer::HelloRequest request;
    request.set_name("world");
    request.add_tags("t" + std::to_string(i));
    consumer::HelloReply reply;
    arenarpc::Controller cntl;
    stub.Say(&cntl, &request, &reply, nullptr);
    if (cntl.Failed()) return Fail("call failed: " + cntl.ErrorText());
    if (reply.text() != "hello world" || reply.tags_size() != 1 ||
        reply.tags(0) != "t" + std::to_string(i)) {
      return Fail("unexpected reply: " + reply.ShortDebugString());
    }
  }
  server.Stop();
  server.Join();
  std::printf("consumer: 3 baidu_std calls ok\n");
  return 0;
}
