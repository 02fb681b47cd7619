// trial_turn_bench: how many calls a memory strategy needs, after another strategy served, before
// its calls cost what they cost when it serves alone: the warm-up an "auto" trial turn needs
// (docs/memory.md, "Trial turns"). One thread runs the echo call (parse, CopyFrom, serialize) of
// a ring of seed-workload requests in turns of --turn calls per candidate, round robin, as an
// "auto" trial does; each call's thread CPU is kept by its position in the turn. Then each
// candidate runs --alone_calls calls in a row, and the report gives, per candidate and range of
// positions, the median of each call's CPU over the median CPU of the same request served by
// the candidate alone (1.000: the call cost what it costs alone).
#include <gflags/gflags.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "arenarpc/memory/message_memory.h"
#include "echo/echo_payload.pb.h"
#include "echo/payload_generator.h"
#include "micro_scenarios.h"
#include "util/thread_cpu_timer.h"

namespace {

using arenarpc::bench::RunTask;
using arenarpc::bench::Scenario;
using arenarpc::bench::TaskContext;
using arenarpc::memory::MethodMemory;
using arenarpc::util::ThreadCpuTimer;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

double TimedCall(MethodMemory& method, TaskContext& ctx, int index) {
  const uint64_t start = ThreadCpuTimer::Now();
  RunTask(Scenario::kParseCopySerialize, method, ctx, index);
  return static_cast<double>(ThreadCpuTimer::Now() - start);
}

}  // namespace

DEFINE_string(candidates, "paged,reuse,arena,heap", "strategies taking turns");
DEFINE_int32(payload_scale, 10, "workload payload_scale (10: the seed workload, ~136 KB)");
DEFINE_int32(requests, 64, "distinct requests in the ring (the press's default)");
DEFINE_int32(turn, 512, "calls per candidate per turn");
DEFINE_int32(rounds, 12, "turns per candidate (the first is left out: a cold process)");
DEFINE_int32(alone_calls, 2048, "calls of each candidate alone, after the turns");

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  std::vector<std::string> names;
  std::stringstream list(FLAGS_candidates);
  for (std::string name; std::getline(list, name, ',');) names.push_back(name);
  std::vector<std::string> requests;
  for (int i = 0; i < FLAGS_requests; ++i) {
    arenarpc::example::EchoRequest r;
    arenarpc::example::PayloadGenerator(FLAGS_payload_scale, 1000 + static_cast<uint64_t>(i))
        .Fill(&r);
    requests.push_back(r.SerializeAsString());
  }
  // One strategy and one binding per candidate, as "auto" holds them.
  std::vector<std::shared_ptr<arenarpc::memory::MessageMemory>> strategies;
  std::vector<std::unique_ptr<MethodMemory>> methods;
  for (const std::string& name : names) {
    strategies.push_back(arenarpc::memory::MakeMessageMemory(name, {}, nullptr));
    methods.push_back(strategies.back()->Bind(arenarpc::example::EchoRequest::default_instance(),
                                              arenarpc::example::EchoResponse::default_instance()));
  }
  TaskContext ctx;
  ctx.requests = &requests;
  ctx.payload_scale = FLAGS_payload_scale;
  // The positions in a turn, in ranges that double: [0, 8), [8, 16), [16, 32), ...
  std::vector<int> edges = {0, 8};
  while (edges.back() < FLAGS_turn) edges.push_back(std::min(edges.back() * 2, FLAGS_turn));
  const size_t ranges = edges.size() - 1;
  // Each call's CPU and request, by candidate and range of positions; compared at the end with
  // the same request's calls alone (requests differ in size: a range must not look cheap because
  // its positions fell on small requests).
  struct Call {
    double ns;
    size_t request;
  };
  std::vector<std::vector<std::vector<Call>>> turns(names.size(),
                                                    std::vector<std::vector<Call>>(ranges));
  int index = 0;
  for (int round = 0; round < FLAGS_rounds; ++round) {
    for (size_t c = 0; c < names.size(); ++c) {
      size_t range = 0;
      for (int position = 0; position < FLAGS_turn; ++position) {
        const size_t request = static_cast<size_t>(index) % requests.size();
        const double ns = TimedCall(*methods[c], ctx, index++);
        while (position >= edges[range + 1]) ++range;
        if (round > 0) turns[c][range].push_back({ns, request});
      }
    }
  }
  // Alone: per candidate, the median CPU of each request (its first quarter of calls warms it).
  std::vector<std::vector<double>> alone(names.size(), std::vector<double>(requests.size()));
  std::vector<double> alone_call(names.size()), alone_mean(names.size()), alone_cv(names.size());
  for (size_t c = 0; c < names.size(); ++c) {
    std::vector<std::vector<double>> by_request(requests.size());
    std::vector<double> all;
    for (int i = 0; i < FLAGS_alone_calls; ++i) {
      const size_t request = static_cast<size_t>(index) % requests.size();
      const double ns = TimedCall(*methods[c], ctx, index++);
      if (i < FLAGS_alone_calls / 4) continue;
      by_request[request].push_back(ns);
      all.push_back(ns);
    }
    for (size_t r = 0; r < requests.size(); ++r) alone[c][r] = Median(by_request[r]);
    alone_call[c] = Median(all);
    double sum = 0;
    for (double ns : all) sum += ns;
    alone_mean[c] = sum / static_cast<double>(all.size());
    // How far one call strays from its request's median: the spread a trial's mean must average.
    std::vector<double> ratios;
    double ratio_sum = 0, ratio_squares = 0;
    for (size_t r = 0; r < requests.size(); ++r) {
      for (double ns : by_request[r]) {
        ratio_sum += ns / alone[c][r];
        ratio_squares += ns / alone[c][r] * ns / alone[c][r];
        ratios.push_back(ns / alone[c][r]);
      }
    }
    const double n = static_cast<double>(ratios.size());
    const double mean = ratio_sum / n;
    alone_cv[c] = std::sqrt(std::max(0.0, ratio_squares / n - mean * mean)) / mean;
  }
  std::printf("# trial_turn_bench payload_scale=%d turn=%d rounds=%d alone_calls=%d bytes=%zu\n",
              FLAGS_payload_scale, FLAGS_turn, FLAGS_rounds, FLAGS_alone_calls, ctx.bytes);
  std::printf("%-8s %9s %9s %6s", "strategy", "alone_us", "mean_us", "cv");
  for (size_t r = 0; r < ranges; ++r) {
    std::printf(" %9s", ("[" + std::to_string(edges[r]) + "," + std::to_string(edges[r + 1]) + ")")
                            .c_str());
  }
  std::printf("\n");
  for (size_t c = 0; c < names.size(); ++c) {
    std::printf("%-8s %9.1f %9.1f %6.3f", names[c].c_str(), alone_call[c] / 1000,
                alone_mean[c] / 1000, alone_cv[c]);
    for (size_t r = 0; r < ranges; ++r) {
      std::vector<double> ratios;
      for (const Call& call : turns[c][r]) ratios.push_back(call.ns / alone[c][call.request]);
      std::printf(" %9.3f", Median(ratios));
    }
    std::printf("\n");
  }
  return 0;
}
