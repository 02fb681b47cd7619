// Trials that compare like with like: CompareTrial's cost model, and AutoChooser ranking
// candidates fed calls of different sizes by cost per unit of work, re-trying what it cannot
// rank. Synthetic samples: each candidate's cost is a known function of the call's wire bytes.
#include "memory/trial_comparison.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "auto_test_support.h"
#include "memory/auto_chooser.h"

namespace arenarpc::memory {
namespace {

// A call of `bytes` wire bytes (half request, half response) served by `candidate`.
using CostOf = std::function<uint64_t(uint32_t candidate, uint64_t bytes)>;
using SizeOf = std::function<uint64_t(uint32_t candidate, uint64_t call)>;

// Serves calls until the chooser settles (or `max_calls`); returns the calls served.
uint64_t RunTrial(AutoChooser& chooser, const CostOf& cost, const SizeOf& size,
                  uint64_t max_calls = 100000) {
  uint64_t call = 0;
  while (chooser.Report().in_trial && call < max_calls) {
    const AutoChooser::Pick pick = chooser.Next();
    const uint64_t bytes = size(pick.candidate, call++);
    if (!pick.measure) continue;
    chooser.Record(pick.candidate,
                   {cost(pick.candidate, bytes), bytes, bytes / 2, bytes - bytes / 2}, 1000);
  }
  return call;
}

AutoSettings Trials(uint32_t block) {
  AutoSettings s = QuickAutoSettings();
  s.trial_calls = 24;
  s.trial_block = block;
  return s;
}

TEST(CompareTrial, RecoversAFixedAndPerByteCost) {
  std::vector<std::vector<TrialSample>> samples(2);
  for (uint64_t w = 1000; w <= 50000; w += 1000) {
    samples[0].push_back({12000 + 7 * w, w});
    samples[1].push_back({12000 + 7 * (w + 500), w + 500});
  }
  const TrialComparison c = CompareTrial(samples);
  EXPECT_NEAR(c.per_byte_ns, 7.0, 1e-6);
  EXPECT_NEAR(c.fixed_ns, 12000.0, 1e-3);
  EXPECT_NEAR(c.reference_bytes, 25750.0, 1e-6);
  // Both cost the same at the reference size, whatever their own calls' sizes.
  EXPECT_NEAR(c.candidates[0].cpu_ns, c.candidates[1].cpu_ns, 1.0);
  EXPECT_NEAR(c.candidates[0].cpu_ns, 12000 + 7 * 25750.0, 400);
  EXPECT_TRUE(c.candidates[0].comparable);
  EXPECT_TRUE(c.candidates[1].comparable);
}

TEST(CompareTrial, CallsOfAnotherSizeAreNotComparable) {
  std::vector<std::vector<TrialSample>> samples(3);
  for (uint64_t i = 0; i < 24; ++i) {
    samples[0].push_back({1'000'000 + i, 136000 + i * 10});
    samples[1].push_back({900'000 + i, 136000 + i * 10});
    samples[2].push_back({17'000 + i, 200 + i});  // tiny calls: cheap, but not the same work
  }
  const TrialComparison c = CompareTrial(samples);
  EXPECT_TRUE(c.candidates[0].comparable);
  EXPECT_TRUE(c.candidates[1].comparable);
  EXPECT_FALSE(c.candidates[2].comparable);
}

TEST(AutoChooser, RanksByCostPerUnitOfWorkNotPerCall) {
  // "small" costs 10 us + 10 ns/byte and happens to serve calls of 20-40 KB; "big" costs
  // 10 us + 6 ns/byte and serves calls of 40-80 KB. Per call, small looks cheaper (~310 us
  // against ~370); per unit of work big is cheaper at every size.
  const CostOf cost = [](uint32_t c, uint64_t bytes) { return 10'000 + (c == 0 ? 10 : 6) * bytes; };
  const SizeOf size = [](uint32_t c, uint64_t call) {
    const uint64_t spread = call * 7919 % 1000;  // deterministic, spread over the range
    return c == 0 ? 20'000 + spread * 20 : 40'000 + spread * 40;
  };
  AutoChooser chooser({"small", "big"}, Trials(1));
  RunTrial(chooser, cost, size);
  const MemoryChoice choice = chooser.Report();
  ASSERT_FALSE(choice.in_trial);
  // What a per-call median sees: small cheaper.
  EXPECT_LT(choice.candidates[0].raw_cpu_ns, choice.candidates[1].raw_cpu_ns);
  // Per unit of work: big, at the trial's mean size.
  EXPECT_EQ(choice.chosen, "big") << choice.reason;
  EXPECT_LT(choice.candidates[1].cpu_ns, choice.candidates[0].cpu_ns);
  EXPECT_GT(choice.reference_bytes, 30'000u);
  EXPECT_LT(choice.reference_bytes, 60'000u);
  EXPECT_GT(choice.ns_per_kib, 0);
}

TEST(AutoChooser, ACandidateMeasuredOnTinyCallsIsRetriedNotCrowned) {
  // The first turn of "heap" gets a burst of tiny calls (17 us each) while the others serve the
  // seed workload's ~136 KB calls; heap costs more than both on those.
  const CostOf cost = [](uint32_t c, uint64_t bytes) -> uint64_t {
    if (bytes < 1000) return 17'000;
    return c == 0 ? 1'084'000 : c == 1 ? 978'000 : 1'300'000;
  };
  for (const bool tiny_throughout : {false, true}) {
    AutoChooser chooser({"paged", "reuse", "heap"}, Trials(26));
    bool first_heap_turn = true;
    uint64_t heap_turn_ends = UINT64_MAX;
    const SizeOf size = [&](uint32_t c, uint64_t call) -> uint64_t {
      if (c == 2 && (tiny_throughout || first_heap_turn)) {
        if (heap_turn_ends == UINT64_MAX) heap_turn_ends = call + 26;
        if (call + 1 >= heap_turn_ends) first_heap_turn = false;
        return 200;
      }
      return 136'000 + call % 17;
    };
    RunTrial(chooser, cost, size);
    const MemoryChoice choice = chooser.Report();
    ASSERT_FALSE(choice.in_trial);
    EXPECT_EQ(choice.chosen, "reuse") << choice.reason;
    if (tiny_throughout) {
      EXPECT_FALSE(choice.candidates[2].comparable);
      EXPECT_NE(choice.reason.find("heap 17.00 us [measured on calls of 200 bytes]"),
                std::string::npos)
          << choice.reason;
    } else {
      EXPECT_TRUE(choice.candidates[2].comparable) << "heap was re-tried on the same work";
      EXPECT_GT(choice.candidates[2].cpu_ns, choice.candidates[1].cpu_ns);
    }
  }
}

TEST(AutoChooser, OverlappingIntervalsKeepTheIncumbent) {
  // a serves: the first trial and its confirmation found it half b's cost. In the recheck after
  // them b is 7 % cheaper than a (past the 5 % margin); each candidate's calls spread evenly over
  // +-spread around its cost.
  const auto run = [](double spread) {
    std::vector<uint64_t> served(2, 0);
    AutoSettings s = Trials(1);
    s.trial_calls = 16;
    AutoChooser chooser({"a", "b"}, s);
    double b_cost = 2'000'000;
    const CostOf cost = [&](uint32_t c, uint64_t) {
      const double position = static_cast<double>(served[c]++ * 7 % 13) / 12;  // 0..1
      return static_cast<uint64_t>((c == 0 ? 1'000'000 : b_cost) *
                                   (1 - spread + 2 * spread * position));
    };
    const SizeOf size = [](uint32_t, uint64_t) -> uint64_t { return 5000; };
    uint64_t calls = RunTrial(chooser, cost, size);  // the last trial's calls
    for (int trial = 1; trial < 3; ++trial) {
      for (int i = 0; i < 100000 && !chooser.Report().in_trial; ++i) {  // between trials
        const AutoChooser::Pick pick = chooser.Next();
        if (pick.measure) {
          chooser.Record(pick.candidate, {cost(pick.candidate, 5000), 5000, 2500, 2500}, 1000);
        }
      }
      if (trial == 2) b_cost = 930'000;
      calls = RunTrial(chooser, cost, size);
    }
    EXPECT_EQ(chooser.Report().trials, 3u);
    EXPECT_NE(chooser.Report().reason.find("periodic recheck"), std::string::npos);
    return std::make_pair(chooser.Report(), calls);
  };
  const auto [noisy, noisy_calls] = run(0.3);
  EXPECT_EQ(noisy.chosen, "a") << noisy.reason;
  EXPECT_NE(noisy.reason.find("a kept (b not clearly cheaper)"), std::string::npos) << noisy.reason;
  EXPECT_LT(noisy.candidates[1].cpu_ns, noisy.candidates[0].cpu_ns);  // b leads, within noise
  EXPECT_GE(noisy.candidates[1].cpu_ns_high, noisy.candidates[0].cpu_ns_low);
  // Re-tried before keeping a: each candidate counted 3 rounds of 16 calls.
  EXPECT_EQ(noisy.candidates[0].samples, 3u * 16);
  EXPECT_EQ(noisy.candidates[1].samples, 3u * 16);
  EXPECT_GE(noisy_calls, 3u * 2 * (2 + 16));
  // The same difference measured precisely enough: b after one round.
  const auto [clear, clear_calls] = run(0.02);
  EXPECT_EQ(clear.chosen, "b") << clear.reason;
  EXPECT_LT(clear.candidates[1].cpu_ns_high, clear.candidates[0].cpu_ns_low);
  EXPECT_EQ(clear.candidates[1].samples, 16u);
}

TEST(AutoChooser, CallsOfAlternatingSizesAreRankedByTheirMeanCost) {
  // compare_modes' "mixed" (scale 10 and 1 alternating) and "bimodal" (one scale-10 call in ten)
  // rings: ~247 KB calls (request + response) among 24-byte ones. Each candidate's cost per call of
  // each size in instructions, as trial_turn_bench measured its counted calls under callgrind
  // (docs/benchmarks.md, "Trial turns"), plus 20 us of the runtime's own work that every call
  // costs alike. reuse is the cheapest on the large calls and the dearest but arena on the tiny
  // ones: per call a median ranks by whichever size is the majority, the trial by the mean.
  const std::vector<double> large = {6'871'619, 5'393'587, 7'748'351, 14'452'749};
  const std::vector<double> tiny = {5'472, 11'888, 18'536, 7'687};
  const auto cost_ns = [&](uint32_t c, uint64_t bytes) {
    return 20'000 + (bytes > 1000 ? large[c] : tiny[c]) / 3;  // ~3 instructions per ns
  };
  for (const uint64_t period : {2u, 10u}) {
    for (const uint64_t phase : {0u, 3u}) {
      AutoChooser chooser({"paged", "reuse", "arena", "heap"}, AutoSettings{});
      // The call's place in the ring decides its size, whichever candidate serves it: turns of
      // 144 calls do not span whole periods of ten, so candidates count 12 or 13 large calls.
      const SizeOf size = [&](uint32_t, uint64_t call) -> uint64_t {
        return (call + phase) % period == 0 ? 247'458 : 24;
      };
      RunTrial(chooser, [&](uint32_t c, uint64_t bytes) {
        return static_cast<uint64_t>(cost_ns(c, bytes));
      }, size);
      const MemoryChoice choice = chooser.Report();
      ASSERT_FALSE(choice.in_trial);
      EXPECT_EQ(choice.chosen, "reuse") << "period " << period << ": " << choice.reason;
      // Each figure over paged's is the ratio of their mean costs on the ring's mix, within 1 %.
      const auto mean = [&](uint32_t c) {
        return (cost_ns(c, 247'458) + static_cast<double>(period - 1) * cost_ns(c, 24)) /
               static_cast<double>(period);
      };
      for (uint32_t c = 1; c < 4; ++c) {
        EXPECT_NEAR(static_cast<double>(choice.candidates[c].cpu_ns) /
                        static_cast<double>(choice.candidates[0].cpu_ns),
                    mean(c) / mean(0), 0.01 * mean(c) / mean(0))
            << "period " << period << ", " << choice.candidates[c].name << ": " << choice.reason;
      }
    }
  }
}

TEST(AutoChooser, TenPercentTinyCallsDoNotChangeTheChoice) {
  // A model of the seed workload (~136 KB calls; per-call CPU of each mode as measured side by
  // side, +-10 % noise) with and without 10 % tiny calls (~15 us in every mode) mixed in at
  // random. Unit level, on synthetic samples: an end-to-end run is too slow and noisy for CI.
  const auto run = [](double tiny_share, uint32_t seed) {
    std::mt19937 random(seed);
    std::uniform_real_distribution<double> unit(0, 1);
    // CPU per call at 136 KB; a call costs 14 us plus its mode's rate per byte.
    const std::vector<double> at_136k = {1'084'000, 978'000, 1'100'000, 1'300'000};
    AutoSettings s = AutoSettings{};  // the defaults: blocks of 64, 48 counted calls
    AutoChooser chooser({"paged", "reuse", "arena", "heap"}, s);
    RunTrial(
        chooser,
        [&](uint32_t c, uint64_t bytes) {
          const double base = 14'000 + (at_136k[c] - 14'000) * static_cast<double>(bytes) / 136'000;
          return static_cast<uint64_t>(base * (0.9 + 0.2 * unit(random)));
        },
        [&](uint32_t, uint64_t) -> uint64_t {
          return unit(random) < tiny_share ? 150 + static_cast<uint64_t>(200 * unit(random))
                                           : 130'000 + static_cast<uint64_t>(12'000 * unit(random));
        });
    return chooser.Report();
  };
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const MemoryChoice pure = run(0, seed);
    const MemoryChoice mixed = run(0.1, seed);
    ASSERT_FALSE(pure.in_trial);
    ASSERT_FALSE(mixed.in_trial);
    EXPECT_EQ(pure.chosen, "reuse") << "seed " << seed << ": " << pure.reason;
    EXPECT_EQ(mixed.chosen, pure.chosen) << "seed " << seed << ": " << mixed.reason;
  }
}

}  // namespace
}  // namespace arenarpc::memory
