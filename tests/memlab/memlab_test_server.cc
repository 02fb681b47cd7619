// The catalog service with a handler chosen to test bench/memlab's reply checks:
//   --handler=plain          the catalog's own Search (deterministic: memlab must flag nothing)
//   --handler=capacity       adds to total_matches the capacity of the response's `products`
//                            before filling it: 0 on a fresh response (heap, arena, paged), the
//                            kept elements on one the reuse strategy pooled (cleared in place,
//                            its repeated fields keep their capacity): its replies differ only
//                            under reuse, which memlab must flag as a strategy difference
//   --handler=counter        adds a call counter: replies differ from call to call in
//                            every strategy, which memlab must report as a non-deterministic
//                            handler, not as a strategy fault
// Prints "memlab_test_server listening on 127.0.0.1:PORT pid=PID" once it listens.
#include <gflags/gflags.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>

#include "arenarpc/closure_guard.h"
#include "arenarpc/server.h"
#include "catalog/catalog_service.h"

DEFINE_int32(port, 0, "Listen on 127.0.0.1 at this port (0 = pick a free one)");
DEFINE_string(handler, "plain", "plain | capacity | counter");
DEFINE_int32(threads, 1, "I/O threads");

namespace {

namespace catalog = arenarpc::example::catalog;

enum class Handler { kPlain, kCapacity, kCounter };

class TestCatalogService final : public catalog::CatalogService {
 public:
  TestCatalogService(const catalog::Catalog& catalog, Handler handler)
      : catalog_(catalog), handler_(handler) {}

  void Search(google::protobuf::RpcController* controller, const catalog::SearchRequest* request,
              catalog::SearchResponse* response, google::protobuf::Closure* done) override {
    arenarpc::ClosureGuard done_guard(done);
    // Read before the handler writes anything: what a fresh response would not have.
    const int kept = response->products().Capacity();
    if (std::string error = catalog_.Search(*request, response); !error.empty()) {
      controller->SetFailed(error);
      return;
    }
    switch (handler_) {
      case Handler::kPlain: break;
      case Handler::kCapacity: response->set_total_matches(response->total_matches() + kept); break;
      case Handler::kCounter:
        response->set_total_matches(response->total_matches() +
                                    static_cast<int32_t>(calls_.fetch_add(1) % 1000003));
        break;
    }
  }

  void Lookup(google::protobuf::RpcController*, const catalog::LookupRequest* request,
              catalog::LookupResponse* response, google::protobuf::Closure* done) override {
    arenarpc::ClosureGuard done_guard(done);
    catalog_.Lookup(*request, response);
  }

 private:
  const catalog::Catalog& catalog_;
  const Handler handler_;
  std::atomic<uint64_t> calls_{0};
};

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  Handler handler = Handler::kPlain;
  if (FLAGS_handler == "capacity") {
    handler = Handler::kCapacity;
  } else if (FLAGS_handler == "counter") {
    handler = Handler::kCounter;
  } else if (FLAGS_handler != "plain") {
    std::fprintf(stderr, "memlab_test_server: --handler: expected plain, capacity or counter, got "
                 "'%s'\n", FLAGS_handler.c_str());
    return 2;
  }
  const catalog::Catalog products(500);
  TestCatalogService service(products, handler);
  arenarpc::ServerOptions options;
  options.num_threads = FLAGS_threads;
  arenarpc::Server server;
  if (server.AddService(&service, arenarpc::SERVER_DOESNT_OWN_SERVICE) != 0 ||
      server.Start("127.0.0.1:" + std::to_string(FLAGS_port), options) != 0) {
    std::fprintf(stderr, "memlab_test_server: %s\n", server.last_error().c_str());
    return 1;
  }
  std::printf("memlab_test_server listening on 127.0.0.1:%d pid=%d\n", server.listen_port(),
              static_cast<int>(getpid()));
  std::fflush(stdout);
  server.RunUntilAskedToQuit();
  return 0;
}
