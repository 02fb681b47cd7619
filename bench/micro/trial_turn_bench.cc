// trial_turn_bench: how many calls a memory strategy needs, after another strategy served, before
// its calls cost what they cost when it serves alone: the warm-up an "auto" trial turn needs
// (docs/memory.md, "Trial turns"), and what a trial's figure makes of the counted calls. One
// thread runs the echo call (parse, CopyFrom, serialize) of a ring of requests (the seed workload,
// or arenarpc_press's --payload_mix ring) in turns of --turn calls per candidate, round robin, as
// an "auto" trial does; each call's thread CPU is kept by its position in the turn. Then each
// candidate runs --alone_calls calls in a row. The report gives, per candidate:
//   * per range of positions, the median of each call's CPU over the median CPU of the same
//     request served by the candidate alone (1.000: the call cost what it costs alone);
//   * over the positions a trial counts ([--warmup, --turn)), the calls' total CPU over what the
//     same requests cost alone (means), per payload scale: whether a turn charges a candidate more
//     than serving alone does, and on which calls;
//   * each round's trial figure (CompareTrial on the counted calls, as AutoChooser ranks them)
//     over the candidate's mean CPU per call alone on the same mix.
// Each call runs in a function of its own per (candidate, phase, scale), Bucket<N>, so that under
// callgrind (valgrind --tool=callgrind; the instruction counts do not depend on the machine's
// load) `callgrind_annotate --inclusive=yes` gives each bucket's instructions; the report's
// "bucket" lines give the calls each bucket ran.
#include <gflags/gflags.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "arenarpc/memory/message_memory.h"
#include "echo/echo_payload.pb.h"
#include "echo/payload_generator.h"
#include "memory/trial_comparison.h"
#include "micro_scenarios.h"
#include "press/payload_mix.h"
#include "press/request_source.h"
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

// Phases of a call, for the callgrind buckets.
// The first round's turns (a cold process, left out of the report) run in buckets of their own.
enum Phase { kColdRound, kTurnWarmup, kTurnCounted, kTurnLate, kAloneWarmup, kAlone, kPhases };
const char* const kPhaseNames[kPhases] = {"cold_round",   "turn_warmup", "turn_counted",
                                          "turn_late",    "alone_warmup", "alone"};
constexpr int kMaxCandidates = 4;
constexpr int kMaxScales = 4;
constexpr int kBuckets = kMaxCandidates * kPhases * kMaxScales;

template <int kBucket>
[[gnu::noinline]] double Bucket(MethodMemory& method, TaskContext& ctx, int index) {
  const uint64_t start = ThreadCpuTimer::Now();
  RunTask(Scenario::kParseCopySerialize, method, ctx, index);
  const uint64_t ns = ThreadCpuTimer::Now() - start;
  asm volatile("" ::: "memory");  // keeps the bucket a call of its own (no tail call)
  return static_cast<double>(ns);
}

using BucketFn = double (*)(MethodMemory&, TaskContext&, int);
template <size_t... kI>
constexpr std::array<BucketFn, sizeof...(kI)> BucketTable(std::index_sequence<kI...>) {
  return {&Bucket<static_cast<int>(kI)>...};
}
constexpr std::array<BucketFn, kBuckets> kBucketFns = BucketTable(std::make_index_sequence<kBuckets>{});

// Minor page faults of this thread so far: a call that maps fresh memory (malloc's mmap for a large
// block, a page cache refilled from the system) pays for it in faults, which callgrind's
// instruction counts leave out.
uint64_t MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return static_cast<uint64_t>(usage.ru_minflt);
}

int BucketOf(size_t candidate, Phase phase, size_t scale) {
  return (static_cast<int>(candidate) * kPhases + phase) * kMaxScales + static_cast<int>(scale);
}

}  // namespace

DEFINE_string(candidates, "paged,reuse,arena,heap", "strategies taking turns (at most 4)");
DEFINE_int32(payload_scale, 10, "workload payload_scale (10: the seed workload, ~136 KB)");
DEFINE_string(payload_mix, "",
              "SCALE:WEIGHT,... as arenarpc_press --payload_mix (10:1,1:1 is compare_modes' "
              "'mixed', 1:9,10:1 its 'bimodal'): the press's ring of requests of several scales, "
              "in its order; replaces --payload_scale");
DEFINE_int32(requests, 64, "distinct requests in the ring (the press's default)");
DEFINE_int32(turn, 512, "calls per candidate per turn");
DEFINE_int32(warmup, 16, "first calls of a turn a trial does not count (AutoSettings::warmup_calls)");
DEFINE_int32(late_from, 0,
             "> --warmup: counted calls from this position of a turn on run in buckets of their own "
             "(turn_late), to tell under callgrind whether a cost fades within the turn");
DEFINE_int32(rounds, 12, "turns per candidate (the first is left out: a cold process)");
DEFINE_int32(alone_calls, 2048, "calls of each candidate alone, after the turns");

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  std::vector<std::string> names;
  std::stringstream list(FLAGS_candidates);
  for (std::string name; std::getline(list, name, ',');) names.push_back(name);
  if (names.empty() || names.size() > kMaxCandidates || FLAGS_warmup >= FLAGS_turn) {
    std::fprintf(stderr, "1 to %d candidates, --warmup below --turn\n", kMaxCandidates);
    return 2;
  }
  // The ring, and each request's scale (index into `scales`).
  std::vector<std::string> requests;
  std::vector<size_t> scale_of;
  std::vector<int> scales;
  if (FLAGS_payload_mix.empty()) {
    scales = {FLAGS_payload_scale};
    for (int i = 0; i < FLAGS_requests; ++i) {
      arenarpc::example::EchoRequest r;
      arenarpc::example::PayloadGenerator(FLAGS_payload_scale, 1000 + static_cast<uint64_t>(i))
          .Fill(&r);
      requests.push_back(r.SerializeAsString());
      scale_of.push_back(0);
    }
  } else {
    std::vector<arenarpc::press::PayloadShare> mix;
    if (std::string e = arenarpc::press::ParsePayloadMix(FLAGS_payload_mix, &mix); !e.empty()) {
      std::fprintf(stderr, "%s\n", e.c_str());
      return 2;
    }
    const std::vector<int> order = arenarpc::press::MixOrder(mix);
    for (const auto& share : mix) scales.push_back(share.scale);
    if (scales.size() > kMaxScales) {
      std::fprintf(stderr, "at most %d scales\n", kMaxScales);
      return 2;
    }
    // The press's own ring (its seed's default): the requests compare_modes' server sees, in order.
    arenarpc::press::RequestSource source(mix, FLAGS_requests, 0x5eed);
    for (size_t i = 0; i < source.ring_size(); ++i) {
      requests.push_back(source.Next()->echo.SerializeAsString());
      const int scale = order[i % order.size()];
      scale_of.push_back(static_cast<size_t>(
          std::find(scales.begin(), scales.end(), scale) - scales.begin()));
    }
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
  std::vector<uint64_t> bucket_calls(kBuckets), bucket_faults(kBuckets);
  std::vector<double> bucket_ns(kBuckets);
  // Runs call `index` with candidate c in `phase`; its CPU and wire bytes (request + response).
  const auto call = [&](size_t c, Phase phase, int index, uint64_t* wire_bytes) {
    const size_t request = static_cast<size_t>(index) % requests.size();
    const int bucket = BucketOf(c, phase, scale_of[request]);
    const uint64_t faults = MinorFaults();
    const double ns = kBucketFns[static_cast<size_t>(bucket)](*methods[c], ctx, index);
    ++bucket_calls[static_cast<size_t>(bucket)];
    bucket_faults[static_cast<size_t>(bucket)] += MinorFaults() - faults;
    bucket_ns[static_cast<size_t>(bucket)] += ns;
    *wire_bytes = requests[request].size() + ctx.out.size();
    return ns;
  };
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
    int position;
    uint64_t wire_bytes;
  };
  std::vector<std::vector<std::vector<Call>>> turns(names.size(),
                                                    std::vector<std::vector<Call>>(ranges));
  // By round and candidate, the calls a trial counts.
  std::vector<std::vector<std::vector<arenarpc::memory::TrialSample>>> counted(
      static_cast<size_t>(FLAGS_rounds),
      std::vector<std::vector<arenarpc::memory::TrialSample>>(names.size()));
  int index = 0;
  for (int round = 0; round < FLAGS_rounds; ++round) {
    for (size_t c = 0; c < names.size(); ++c) {
      size_t range = 0;
      for (int position = 0; position < FLAGS_turn; ++position) {
        const size_t request = static_cast<size_t>(index) % requests.size();
        uint64_t wire = 0;
        const Phase phase = round == 0                 ? kColdRound
                            : position < FLAGS_warmup ? kTurnWarmup
                            : FLAGS_late_from > FLAGS_warmup && position >= FLAGS_late_from
                                ? kTurnLate
                                : kTurnCounted;
        const double ns = call(c, phase, index++, &wire);
        while (position >= edges[range + 1]) ++range;
        if (round > 0) turns[c][range].push_back({ns, request, position, wire});
        if (position >= FLAGS_warmup) {
          counted[static_cast<size_t>(round)][c].push_back({static_cast<uint64_t>(ns), wire});
        }
      }
    }
  }
  // Alone: per candidate, the median and mean CPU of each request (its first quarter of calls
  // warms it).
  std::vector<std::vector<double>> alone(names.size(), std::vector<double>(requests.size()));
  std::vector<std::vector<double>> alone_request_mean(names.size(),
                                                      std::vector<double>(requests.size()));
  std::vector<double> alone_call(names.size()), alone_mean(names.size()), alone_cv(names.size());
  for (size_t c = 0; c < names.size(); ++c) {
    std::vector<std::vector<double>> by_request(requests.size());
    std::vector<double> all;
    for (int i = 0; i < FLAGS_alone_calls; ++i) {
      const size_t request = static_cast<size_t>(index) % requests.size();
      uint64_t wire = 0;
      const double ns = call(c, i < FLAGS_alone_calls / 4 ? kAloneWarmup : kAlone, index++, &wire);
      if (i < FLAGS_alone_calls / 4) continue;
      by_request[request].push_back(ns);
      all.push_back(ns);
    }
    for (size_t r = 0; r < requests.size(); ++r) {
      alone[c][r] = Median(by_request[r]);
      double sum = 0;
      for (double ns : by_request[r]) sum += ns;
      alone_request_mean[c][r] = by_request[r].empty() ? 0 : sum / static_cast<double>(by_request[r].size());
    }
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
  std::printf("# trial_turn_bench %s turn=%d warmup=%d rounds=%d alone_calls=%d requests=%zu "
              "bytes=%zu\n",
              FLAGS_payload_mix.empty() ? ("payload_scale=" + std::to_string(FLAGS_payload_scale)).c_str()
                                        : ("payload_mix=" + FLAGS_payload_mix).c_str(),
              FLAGS_turn, FLAGS_warmup, FLAGS_rounds, FLAGS_alone_calls, requests.size(), ctx.bytes);
  for (size_t s = 0; s < scales.size(); ++s) {
    double bytes = 0, n = 0;
    for (size_t r = 0; r < requests.size(); ++r) {
      if (scale_of[r] != s) continue;
      bytes += static_cast<double>(requests[r].size());
      n += 1;
    }
    std::printf("# scale %d: %.0f requests of the ring, %.0f request bytes each on average\n",
                scales[s], n, bytes / n);
  }
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
  // Counted calls (rounds after the first) against the same requests' mean cost alone, per scale.
  std::printf("# counted calls [%d,%d) of rounds 2..%d: total CPU / the same requests' mean CPU "
              "alone; mean us per call alone\n",
              FLAGS_warmup, FLAGS_turn, FLAGS_rounds);
  std::printf("%-8s %9s", "strategy", "all");
  for (int scale : scales) std::printf(" %9s", ("scale" + std::to_string(scale)).c_str());
  for (int scale : scales) std::printf(" %11s", ("alone_s" + std::to_string(scale)).c_str());
  std::printf("\n");
  for (size_t c = 0; c < names.size(); ++c) {
    std::vector<double> in_turn(scales.size() + 1), as_alone(scales.size() + 1);
    std::vector<double> alone_sum(scales.size()), alone_n(scales.size());
    for (size_t r = 0; r < ranges; ++r) {
      for (const Call& call : turns[c][r]) {
        if (call.position < FLAGS_warmup) continue;
        const size_t s = scale_of[call.request];
        in_turn[s] += call.ns;
        as_alone[s] += alone_request_mean[c][call.request];
        in_turn.back() += call.ns;
        as_alone.back() += alone_request_mean[c][call.request];
      }
    }
    for (size_t r = 0; r < requests.size(); ++r) {
      alone_sum[scale_of[r]] += alone_request_mean[c][r];
      alone_n[scale_of[r]] += 1;
    }
    std::printf("%-8s %9.3f", names[c].c_str(), in_turn.back() / as_alone.back());
    for (size_t s = 0; s < scales.size(); ++s) std::printf(" %9.3f", in_turn[s] / as_alone[s]);
    for (size_t s = 0; s < scales.size(); ++s) {
      std::printf(" %11.1f", alone_sum[s] / alone_n[s] / 1000);
    }
    std::printf("\n");
  }
  // Each round's trial figure over the mean CPU per call alone; then the same figures over the
  // first candidate's, against the ratio of their means alone.
  std::printf("# trial figure (CompareTrial of a round's counted calls) / mean CPU per call alone, "
              "rounds 2..%d; then figure / %s's figure (alone: ratio of the means alone)\n",
              FLAGS_rounds, names[0].c_str());
  std::vector<std::vector<double>> figures(names.size());
  for (int round = 1; round < FLAGS_rounds; ++round) {
    const auto comparison = arenarpc::memory::CompareTrial(counted[static_cast<size_t>(round)]);
    for (size_t c = 0; c < names.size(); ++c) {
      figures[c].push_back(comparison.candidates[c].cpu_ns);
    }
  }
  for (size_t c = 0; c < names.size(); ++c) {
    std::printf("%-8s", names[c].c_str());
    for (double f : figures[c]) std::printf(" %6.3f", f / alone_mean[c]);
    std::printf("\n");
  }
  for (size_t c = 1; c < names.size(); ++c) {
    std::printf("%s/%s alone %.3f, trials", names[c].c_str(), names[0].c_str(),
                alone_mean[c] / alone_mean[0]);
    for (size_t round = 0; round < figures[c].size(); ++round) {
      std::printf(" %.3f", figures[c][round] / figures[0][round]);
    }
    std::printf("\n");
  }
  for (int b = 0; b < kBuckets; ++b) {
    if (bucket_calls[static_cast<size_t>(b)] == 0) continue;
    const int scale = b % kMaxScales, phase = b / kMaxScales % kPhases, c = b / kMaxScales / kPhases;
    const auto calls = static_cast<double>(bucket_calls[static_cast<size_t>(b)]);
    std::printf("bucket Bucket<%d> %-6s %-12s scale=%-3d calls=%-5.0f us/call=%9.1f "
                "minor_faults/call=%7.2f\n",
                b, names[static_cast<size_t>(c)].c_str(), kPhaseNames[phase],
                scales[static_cast<size_t>(scale)], calls,
                bucket_ns[static_cast<size_t>(b)] / calls / 1000,
                static_cast<double>(bucket_faults[static_cast<size_t>(b)]) / calls);
  }
  return 0;
}
