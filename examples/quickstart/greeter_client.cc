// The quick start's client (docs/quickstart.md): calls Greeter.SayHello COUNT times, prints each
// reply, and exits 1 if a call failed.
//   greeter_client ADDRESS NAME [COUNT]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "arenarpc/channel.h"
#include "arenarpc/controller.h"
#include "greeter.pb.h"

int main(int argc, char* argv[]) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: greeter_client ADDRESS NAME [COUNT]\n");
    return 2;
  }
  arenarpc::ChannelOptions options;
  options.timeout_ms = 2000;
  arenarpc::Channel channel;
  if (channel.Init(argv[1], &options) != 0) {
    std::fprintf(stderr, "Init: %s\n", channel.last_error().c_str());
    return 1;
  }
  quickstart::Greeter_Stub stub(&channel);
  const int count = argc > 3 ? std::atoi(argv[3]) : 1;
  for (int i = 0; i < count; ++i) {
    quickstart::HelloRequest request;
    request.set_name(argv[2]);
    quickstart::HelloReply reply;
    arenarpc::Controller controller;
    stub.SayHello(&controller, &request, &reply, nullptr);  // nullptr: wait for the reply
    if (controller.Failed()) {
      std::fprintf(stderr, "SayHello failed: [%d] %s\n", controller.ErrorCode(),
                   controller.ErrorText().c_str());
      return 1;
    }
    std::printf("%s (call %lld, %lld us)\n", reply.greeting().c_str(),
                static_cast<long long>(reply.calls()), static_cast<long long>(controller.latency_us()));
  }
  return 0;
}
