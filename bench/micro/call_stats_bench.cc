// call_stats_bench: what recording one server call's statistics costs. "before" is the recording
// the server did before the windowed statistics (cumulative latency histogram, calls, in flight);
// "after" is MethodEntry::CountStarted + CountEnded (the same plus the per-second window slot and
// the most in flight); "arena" is the arena-bytes measure arena/paged calls add. Wall time per
// call on 1..T threads sharing one method; under callgrind, --toggle-collect one of the Record*
// functions and divide its instructions by --calls (docs/observability.md).
#include <gflags/gflags.h>
#include <google/protobuf/arena.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "server/method_entry.h"

DEFINE_int64(calls, 2000000, "calls recorded per thread and variant");
DEFINE_int32(threads, 4, "largest thread count (runs 1 and this)");

namespace {

using arenarpc::server::MethodEntry;
using Clock = std::chrono::steady_clock;

[[gnu::noinline]] void RecordBefore(MethodEntry& m, Clock::time_point, int64_t latency_us) {
  m.in_flight.fetch_add(1, std::memory_order_relaxed);
  m.latency.Record(latency_us);
  m.calls.fetch_add(1, std::memory_order_relaxed);
  m.in_flight.fetch_sub(1, std::memory_order_relaxed);
}

[[gnu::noinline]] void RecordAfter(MethodEntry& m, Clock::time_point now, int64_t latency_us) {
  m.CountStarted();
  m.CountEnded(now, latency_us, 0);
}

[[gnu::noinline]] void RecordArena(MethodEntry& m, const google::protobuf::Arena& arena) {
  m.arena_bytes.fetch_add(arena.SpaceAllocated(), std::memory_order_relaxed);
  m.arena_calls.fetch_add(1, std::memory_order_relaxed);
}

template <typename Record>
double NanosPerCall(int threads, Record record) {
  auto method = std::make_unique<MethodEntry>();
  const auto start = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      google::protobuf::Arena arena;
      google::protobuf::Arena::Create<std::string>(&arena, "x");
      // The clock is read every 64 calls, as a cheap stand-in for the call's own clock read.
      Clock::time_point now = Clock::now();
      for (int64_t i = 0; i < FLAGS_calls; ++i) {
        if ((i & 63) == 0) now = Clock::now();
        record(*method, now, (i * 37 + t) % 5000, arena);
      }
    });
  }
  for (auto& worker : workers) worker.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return seconds * 1e9 / static_cast<double>(FLAGS_calls);  // per call of one thread
}

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  std::printf("threads | before ns/call | after ns/call | arena measure ns/call\n");
  for (int threads : {1, FLAGS_threads}) {
    const double before = NanosPerCall(threads, [](MethodEntry& m, Clock::time_point now,
                                                   int64_t us, const google::protobuf::Arena&) {
      RecordBefore(m, now, us);
    });
    const double after = NanosPerCall(threads, [](MethodEntry& m, Clock::time_point now,
                                                  int64_t us, const google::protobuf::Arena&) {
      RecordAfter(m, now, us);
    });
    const double arena = NanosPerCall(
        threads, [](MethodEntry& m, Clock::time_point, int64_t, const google::protobuf::Arena& a) {
          RecordArena(m, a);
        });
    std::printf("%7d | %14.1f | %12.1f | %21.1f\n", threads, before, after, arena);
    if (threads == FLAGS_threads) break;
  }
  return 0;
}
