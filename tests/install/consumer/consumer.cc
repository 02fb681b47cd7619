// Builds a request/response pair through the installed library: proves headers and libs resolve.
#include <google/protobuf/struct.pb.h>

#include <cstdio>

#include "arenarpc/memory/message_memory.h"

int main() {
  auto memory = arenarpc::memory::MakeMessageMemory("arena");
  google::protobuf::Struct prototype;
  auto method = memory->Bind(prototype, prototype);
  auto pair = method->Acquire();
  if (!pair || pair.arena() == nullptr) return 1;
  std::printf("consumer: %s strategy ok\n", std::string(memory->name()).c_str());
  return 0;
}
