#include "micro_scenarios.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <stdexcept>

#include "echo/echo_payload.pb.h"
#include "echo/payload_generator.h"

namespace arenarpc::bench {

using example::EchoRequest;
using example::EchoResponse;

const char* ScenarioName(Scenario s) {
  return s == Scenario::kBuildFillDestroy ? "build-fill-destroy" : "parse-copy-serialize";
}

Scenario ParseScenario(const std::string& name) {
  if (name == "build") return Scenario::kBuildFillDestroy;
  if (name == "echo") return Scenario::kParseCopySerialize;
  throw std::invalid_argument("unknown scenario '" + name + "' (build | echo)");
}

void RunTask(Scenario scenario, memory::MethodMemory& method, TaskContext& ctx, int task_index) {
  memory::MessagePair pair = method.Acquire();
  auto& request = static_cast<EchoRequest&>(*pair.request());
  auto& response = static_cast<EchoResponse&>(*pair.response());
  if (scenario == Scenario::kBuildFillDestroy) {
    // Same content for every strategy: the seed depends on the task only.
    const uint64_t seed = static_cast<uint64_t>(task_index) * 2 + 1;
    example::PayloadGenerator(ctx.payload_scale, seed).Fill(&request);
    example::PayloadGenerator(ctx.payload_scale, seed + 1).Fill(response.mutable_payload());
    pair.PrepareResponse();
    ctx.bytes += static_cast<size_t>(request.payload().result_size() + response.payload().result_size());
  } else {
    const std::string& wire = (*ctx.requests)[static_cast<size_t>(task_index) % ctx.requests->size()];
    memory::SerializedSpan bytes(wire);  // as the servers do
    if (pair.ParseRequest(bytes) != memory::ParseResult::kOk) {
      throw std::runtime_error("request parse failed");
    }
    response.mutable_payload()->CopyFrom(request.payload());
    pair.PrepareResponse();
    response.SerializeToString(&ctx.out);
    ctx.bytes += ctx.out.size();
  }
}

}  // namespace arenarpc::bench
