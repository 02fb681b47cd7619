// catalog_server: the catalog example (docs/memlab.md), a search-style service whose handlers
// read nested requests (maps, oneofs, optional fields) and build responses of another type.
// Prints one line once it listens:
//   catalog_server listening on 127.0.0.1:8020 mode=auto pid=1234
// and stops cleanly on SIGINT/SIGTERM.
//   catalog_server --port=8020 --mode=reuse --threads=1
#include <gflags/gflags.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "arenarpc/server.h"
#include "catalog/catalog_service.h"

namespace {

bool CheckPort(const char*, int32_t v) {
  if (v >= 0 && v <= 65535) return true;
  std::fprintf(stderr, "catalog_server: --port: %d is not 0..65535 (0 = pick a free one)\n", v);
  return false;
}
bool CheckMode(const char*, const std::string& v) {
  if (v == "heap" || v == "arena" || v == "paged" || v == "reuse" || v == "auto") return true;
  std::fprintf(stderr, "catalog_server: --mode: must be heap, arena, paged, reuse or auto, got "
               "'%s'\n", v.c_str());
  return false;
}
bool CheckNonNegative(const char* flag, int32_t v) {
  if (v >= 0) return true;
  std::fprintf(stderr, "catalog_server: --%s: must be >= 0, got %d\n", flag, v);
  return false;
}

}  // namespace

DEFINE_string(ip, "127.0.0.1", "Listen on this address");
DEFINE_int32(port, 8020, "Listen on this port (0 = pick a free one)");
DEFINE_validator(port, &CheckPort);
DEFINE_int32(threads, 0, "I/O threads (handlers run on them); 0 = nproc");
DEFINE_validator(threads, &CheckNonNegative);
DEFINE_string(mode, "auto", "Message memory: auto | heap | arena | paged | reuse "
              "(ARENARPC_MEMORY_MODE overrides it)");
DEFINE_validator(mode, &CheckMode);
DEFINE_int32(products, 2000, "Products in the catalog (made from a fixed seed)");
DEFINE_validator(products, &CheckNonNegative);

int main(int argc, char** argv) {
  gflags::SetUsageMessage("arenarpc catalog example: a search-style service (docs/memlab.md)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc > 1) {
    std::fprintf(stderr, "catalog_server: unexpected argument '%s'\n", argv[1]);
    return 2;
  }
  const arenarpc::example::catalog::Catalog catalog(static_cast<size_t>(FLAGS_products));
  arenarpc::example::catalog::CatalogServiceImpl service(catalog);
  arenarpc::ServerOptions options;
  options.num_threads = FLAGS_threads;
  options.memory_mode = FLAGS_mode;
  arenarpc::Server server;
  const std::string address = FLAGS_ip + ":" + std::to_string(FLAGS_port);
  if (server.AddService(&service, arenarpc::SERVER_DOESNT_OWN_SERVICE) != 0 ||
      server.Start(address, options) != 0) {
    std::fprintf(stderr, "catalog_server: cannot start on %s: %s\n", address.c_str(),
                 server.last_error().c_str());
    return 1;
  }
  const std::string mode =
      server.GetMethodStats("arenarpc.example.catalog.CatalogService.Search").memory_mode;
  std::printf("catalog_server listening on %s:%d mode=%s pid=%d\n", FLAGS_ip.c_str(),
              server.listen_port(), mode.c_str(), static_cast<int>(getpid()));
  std::fflush(stdout);
  server.RunUntilAskedToQuit();
  return 0;
}
