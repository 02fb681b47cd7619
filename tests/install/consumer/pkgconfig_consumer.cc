// Built with `pkg-config --cflags --libs arenarpc-grpc` (which requires arenarpc): a message pair
// from an arenarpc strategy and a gRPC allocator strategy, without any generated code.
#include <google/protobuf/struct.pb.h>

#include <cstdio>
#include <string>

#include "arenarpc/grpc_memory/message_allocator.h"
#include "arenarpc/memory/message_memory.h"

int main() {
  auto memory = arenarpc::memory::MakeMessageMemory(arenarpc::memory::MemoryMode::kArena);
  google::protobuf::Struct prototype;
  auto method = memory->Bind(prototype, prototype);
  auto pair = method->Acquire();
  if (!pair || pair.arena() == nullptr) return 1;
  auto reuse = arenarpc::grpc_memory::MakeStrategy("reuse", {}, nullptr);
  if (!reuse || reuse->name() != "reuse") return 1;
  std::printf("pkgconfig_consumer: %s and %s strategies ok\n", std::string(memory->name()).c_str(),
              std::string(reuse->name()).c_str());
  return 0;
}
