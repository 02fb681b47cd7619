// memory_micro_bench: T threads x N tasks per strategy, rounds interleaved (heap arena paged reuse,
// heap arena ...), median wall time per strategy. Prints a table and machine-readable RESULT lines
// (bench/run_micro.sh merges the allocators' runs). With --callgrind, only the measured tasks are
// instrumented (run under valgrind --tool=callgrind --instr-atstart=no).
#include <gflags/gflags.h>
#include <valgrind/callgrind.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/memory/message_memory.h"
#include "echo/echo_payload.pb.h"
#include "echo/payload_generator.h"
#include "micro_scenarios.h"

DEFINE_int32(threads, 2, "worker threads (T)");
DEFINE_int32(tasks, 40, "tasks per thread per round (N)");
DEFINE_int32(rounds, 3, "interleaved rounds; the median is reported");
DEFINE_int32(payload_scale, 11, "workload payload_scale (11 gives ~177 KB per message)");
DEFINE_string(strategies, "heap,arena,paged,reuse",
              "comma-separated MessageMemory strategies; reuse+keep: reuse with "
              "ReuseSettings::keep_response_submessages");
DEFINE_string(scenarios, "build,echo", "comma-separated: build (build-fill-destroy), echo (parse-copy-serialize)");
DEFINE_string(allocator, "", "label for the malloc in use (default: guessed from LD_PRELOAD)");
DEFINE_bool(callgrind, false, "instrument only the measured tasks (valgrind --instr-atstart=no)");
DEFINE_int32(warmup_tasks, 2, "untimed tasks per thread before measuring each strategy");
DEFINE_int32(evict_kb, 0,
             "if > 0, each thread writes this many KB of unrelated memory between tasks (untimed: "
             "tasks are then timed one by one) so that every task starts from cold caches, as a "
             "server's call does after an idle gap at a fixed QPS");

namespace arenarpc::bench {
namespace {

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string AllocatorLabel() {
  if (!FLAGS_allocator.empty()) return FLAGS_allocator;
  const char* preload = std::getenv("LD_PRELOAD");
  const std::string p = preload ? preload : "";
  if (p.find("tcmalloc") != std::string::npos) return "tcmalloc";
  if (p.find("jemalloc") != std::string::npos) return "jemalloc";
  return "glibc";
}

// Dirties `buffer` (one write per cache line), evicting the task's memory from the caches.
void EvictCaches(std::vector<char>& buffer, int pass) {
  for (size_t i = 0; i < buffer.size(); i += 64) buffer[i] = static_cast<char>(pass + i);
}

// Runs T threads x n tasks; returns wall milliseconds (with --evict_kb: the tasks' own time, summed
// per thread and averaged over threads, eviction excluded).
double RunTasks(Scenario scenario, memory::MethodMemory& method, const std::vector<std::string>& requests,
                int n, int first_task, bool instrument) {
  std::barrier start(FLAGS_threads + 1);
  std::vector<std::thread> workers;
  std::vector<size_t> bytes(static_cast<size_t>(FLAGS_threads));
  std::vector<double> task_ms(static_cast<size_t>(FLAGS_threads));
  for (int t = 0; t < FLAGS_threads; ++t) {
    workers.emplace_back([&, t] {
      TaskContext ctx;
      ctx.requests = &requests;
      ctx.payload_scale = FLAGS_payload_scale;
      std::vector<char> evict(static_cast<size_t>(std::max(FLAGS_evict_kb, 0)) * 1024);
      start.arrive_and_wait();
      for (int i = 0; i < n; ++i) {
        if (evict.empty()) {
          RunTask(scenario, method, ctx, first_task + t * n + i);
          continue;
        }
        EvictCaches(evict, i);
        const auto task_begin = std::chrono::steady_clock::now();
        RunTask(scenario, method, ctx, first_task + t * n + i);
        task_ms[static_cast<size_t>(t)] += std::chrono::duration<double, std::milli>(
            std::chrono::steady_clock::now() - task_begin).count();
      }
      bytes[static_cast<size_t>(t)] = ctx.bytes;
    });
  }
  if (instrument) CALLGRIND_START_INSTRUMENTATION;
  const auto begin = std::chrono::steady_clock::now();
  start.arrive_and_wait();
  for (auto& w : workers) w.join();
  const auto end = std::chrono::steady_clock::now();
  if (instrument) CALLGRIND_STOP_INSTRUMENTATION;
  size_t total = 0;
  for (size_t b : bytes) total += b;
  if (total == 0 && n > 0) std::fprintf(stderr, "warning: tasks produced nothing\n");
  if (FLAGS_evict_kb > 0) {
    double sum = 0;
    for (double ms : task_ms) sum += ms;
    return sum / FLAGS_threads;
  }
  return std::chrono::duration<double, std::milli>(end - begin).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Main() {
  const std::string allocator = AllocatorLabel();
  const auto strategies = Split(FLAGS_strategies);
  std::vector<Scenario> scenarios;
  for (const auto& s : Split(FLAGS_scenarios)) scenarios.push_back(ParseScenario(s));
  if (FLAGS_threads < 1 || FLAGS_tasks < 1 || FLAGS_rounds < 1 || strategies.empty()) {
    std::fprintf(stderr, "threads, tasks, rounds must be >= 1 and strategies non-empty\n");
    return 2;
  }
  // A ring of distinct serialized requests for the echo scenario (pre-generated: the generator is
  // the client's cost, not the server's).
  std::vector<std::string> requests;
  size_t request_bytes = 0;
  for (int i = 0; i < 8; ++i) {
    example::EchoRequest r;
    example::PayloadGenerator(FLAGS_payload_scale, 1000 + static_cast<uint64_t>(i)).Fill(&r);
    requests.push_back(r.SerializeAsString());
    request_bytes += requests.back().size();
  }
  std::printf("# memory_micro_bench allocator=%s threads=%d tasks=%d rounds=%d payload_scale=%d "
              "(mean request %.0f KB)\n",
              allocator.c_str(), FLAGS_threads, FLAGS_tasks, FLAGS_rounds, FLAGS_payload_scale,
              static_cast<double>(request_bytes) / requests.size() / 1024.0);

  for (Scenario scenario : scenarios) {
    struct Run {
      std::shared_ptr<memory::MessageMemory> memory;
      std::unique_ptr<memory::MethodMemory> method;
      std::vector<double> ms;
    };
    std::map<std::string, Run> runs;
    for (const auto& name : strategies) {
      Run& run = runs[name];
      if (name == "reuse+keep") {
        memory::MemoryOptions options;
        options.reuse.keep_response_submessages = true;
        run.memory = memory::MakeMessageMemory("reuse", options, nullptr);
      } else {
        run.memory = memory::MakeMessageMemory(name, {}, nullptr);
      }
      run.method = run.memory->Bind(example::EchoRequest::default_instance(),
                                    example::EchoResponse::default_instance());
      RunTasks(scenario, *run.method, requests, FLAGS_warmup_tasks, 1 << 20, false);
    }
    for (int round = 0; round < FLAGS_rounds; ++round) {
      for (const auto& name : strategies) {
        Run& run = runs[name];
        run.ms.push_back(RunTasks(scenario, *run.method, requests, FLAGS_tasks, 0, FLAGS_callgrind));
      }
    }
    const double heap_ms = runs.count("heap") ? Median(runs["heap"].ms) : 0;
    std::printf("\n%s (%s): %d threads x %d tasks\n", ScenarioName(scenario), allocator.c_str(),
                FLAGS_threads, FLAGS_tasks);
    std::printf("  %-8s %10s %10s %s\n", "strategy", "median ms", "vs heap", "rounds (ms)");
    for (const auto& name : strategies) {
      const Run& run = runs[name];
      const double ms = Median(run.ms);
      std::string all;
      for (double m : run.ms) all += std::to_string(static_cast<int>(m + 0.5)) + " ";
      std::printf("  %-8s %10.1f %9.1f%% %s\n", name.c_str(), ms,
                  heap_ms > 0 ? (heap_ms - ms) / heap_ms * 100.0 : 0.0, all.c_str());
      std::printf("RESULT scenario=%s allocator=%s strategy=%s ms=%.3f threads=%d tasks=%d\n",
                  ScenarioName(scenario), allocator.c_str(), name.c_str(), ms, FLAGS_threads,
                  FLAGS_tasks);
      const memory::MemoryStats s = run.memory->stats();
      if (name == "reuse") {
        std::printf("  (reuse: %llu reuses, %llu rebuilds, %llu pooled, ~%.1f MB retained)\n",
                    static_cast<unsigned long long>(s.reuses),
                    static_cast<unsigned long long>(s.rebuilds),
                    static_cast<unsigned long long>(s.objects_pooled),
                    static_cast<double>(s.retained_bytes_estimate) / 1e6);
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace arenarpc::bench

int main(int argc, char** argv) {
  gflags::SetUsageMessage("MessageMemory micro-benchmark (see docs/bench-micro.md)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  try {
    return arenarpc::bench::Main();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memory_micro_bench: %s\n", e.what());
    return 2;
  }
}
