#pragma once
// The micro-benchmark's two task bodies, shared by the timed runs and the callgrind runs.
#include <string>
#include <vector>

#include "arenarpc/memory/message_memory.h"

namespace arenarpc::bench {

enum class Scenario {
  kBuildFillDestroy,     // tRPC-cpp's: build request + response, fill both, destroy
  kParseCopySerialize,   // an RPC's: merge a serialized request, CopyFrom its payload, serialize
};

const char* ScenarioName(Scenario s);
Scenario ParseScenario(const std::string& name);  // "build" | "echo"; throws invalid_argument

// Per-thread state a task body needs (kept across tasks, as a server thread would).
struct TaskContext {
  const std::vector<std::string>* requests = nullptr;  // serialized requests (echo scenario)
  int payload_scale = 11;
  std::string out;  // serialization buffer, reused
  size_t bytes = 0; // sum of sizes produced, so the work cannot be optimized away
};

// Runs one task: task_index picks the content, identical across strategies.
void RunTask(Scenario scenario, memory::MethodMemory& method, TaskContext& ctx, int task_index);

}  // namespace arenarpc::bench
