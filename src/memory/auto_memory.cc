// "auto": serves each method with whichever candidate strategy its trials on live calls found
// cheapest (AutoChooser decides; this file measures). A call that is not measured gets the chosen
// candidate's own pair, untouched; a measured one is wrapped to read the thread's CPU clock at
// Acquire() and after Release().
#include <google/protobuf/arena.h>
#include <google/protobuf/message.h>
#if defined(__GLIBC__)
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "memory/auto_chooser.h"
#include "memory/deprecated_memory_options.h"
#include "memory/free_memory_release.h"
#include "memory/memory_stats_sum.h"
#include "memory/strategies.h"
#include "util/thread_cpu_timer.h"

namespace arenarpc::memory {
namespace {

using google::protobuf::Arena;
using google::protobuf::Message;

int64_t NowMs() noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The settings with their deprecated spelling applied (memory/deprecated_memory_options.h).
AutoSettings Resolved(AutoSettings settings) {
  ApplyDeprecatedSpellings(&settings);
  return settings;
}

class AutoMemory final : public MessageMemory, public std::enable_shared_from_this<AutoMemory> {
 public:
  AutoMemory(std::vector<std::shared_ptr<MessageMemory>> candidates, const AutoSettings& settings)
      : candidates_(std::move(candidates)),
        settings_(Resolved(settings)),
        users_(candidates_.size()) {}

  class Method final : public MethodMemory {
   public:
    Method(std::shared_ptr<AutoMemory> owner, const Message& req, const Message& resp)
        : MethodMemory(req, resp),
          owner_(std::move(owner)),
          chooser_(Names(*owner_), owner_->settings_) {
      for (const auto& candidate : owner_->candidates_) {
        candidates_.push_back(candidate->Bind(req, resp));
      }
    }
    ~Method() override {
      std::lock_guard lock(using_mu_);
      owner_->Use(using_, 0);
    }

    MessagePair Acquire() override {
      const AutoChooser::Pick pick = chooser_.Next();
      MethodMemory& candidate = *candidates_[pick.candidate];
      if (!pick.measure) return candidate.Acquire();
      auto call = std::make_unique<MeasuredCall>();
      call->candidate = pick.candidate;
      call->timer.Start();
      call->pair = candidate.Acquire();
      const MessagePair& pair = call->pair;
      return MakePair(pair.request(), pair.response(), pair.arena(), call.release(),
                      pair.response_plain());
    }

    std::optional<MemoryChoice> Choice() const override { return chooser_.Report(); }
    MemoryStats stats() const noexcept override {
      MemoryStats total;
      for (const auto& candidate : candidates_) AddStats(total, candidate->stats());
      return total;
    }

   protected:
    ParseResult ParseRequest(Message*, void* cookie, SerializedMessage& bytes) override {
      auto* call = static_cast<MeasuredCall*>(cookie);
      call->request_bytes = bytes.size();
      return call->pair.ParseRequest(bytes);
    }

    void PrepareResponse(Message*, void* cookie) noexcept override {
      static_cast<MeasuredCall*>(cookie)->pair.PrepareResponse();
    }

    std::optional<uint64_t> HeldBytes(const Message*, const Message*, const Arena*,
                                      void* cookie) const noexcept override {
      return static_cast<const MeasuredCall*>(cookie)->pair.held_bytes();
    }

    void Release(Message* request, Message* response, Arena*,
                 void* cookie) noexcept override {
      std::unique_ptr<MeasuredCall> call(static_cast<MeasuredCall*>(cookie));
      // Only a call that ran start to end on this thread with nothing else in between.
      const std::optional<uint64_t> before_held = call->timer.Elapsed();
      if (!before_held) {
        call->pair.Release();
        if (chooser_.Unmeasured(NowMs()) != AutoChooser::Step::kNone) FollowChooser();
        return;
      }
      // What the call's messages hold: the strategy's own account (an arena's, reuse's estimates
      // of the capacity its pooled objects keep), else a walk.
      const std::optional<uint64_t> known = call->pair.held_bytes();
      const uint64_t held =
          known ? *known : request->SpaceUsedLong() + response->SpaceUsedLong();
      // Serialized by now (a failed call's may be 0): no walk.
      const auto response_bytes = static_cast<uint64_t>(std::max(0, response->GetCachedSize()));
      const uint64_t after_held = util::ThreadCpuTimer::Now();
      call->pair.Release();
      AutoChooser::Measurement m;
      m.cpu_ns = *before_held + (util::ThreadCpuTimer::Now() - after_held);
      m.held_bytes = held;
      m.request_bytes = call->request_bytes;
      m.response_bytes = response_bytes;
      if (chooser_.Record(call->candidate, m, NowMs()) != AutoChooser::Step::kNone) {
        FollowChooser();
      }
    }

   private:
    struct MeasuredCall {
      MessagePair pair;
      uint32_t candidate = 0;
      util::ThreadCpuTimer timer;
      uint64_t request_bytes = 0;
    };

    // The candidates this method may serve with: none before its first call (a method without
    // traffic keeps nothing in use), all during a trial, the chosen one between. Read from the
    // chooser itself, so that transitions seen out of order settle right.
    void FollowChooser() noexcept {
      std::lock_guard lock(using_mu_);
      // Until the confirmation trial, every candidate stays in use: given back after the first
      // trial, they would enter the confirmation cold (reuse's pools and kept trees empty,
      // malloc's free pages returned), which is what the confirmation is there to avoid.
      const bool trial = chooser_.in_trial() || chooser_.awaiting_confirmation();
      uint32_t now = 0;
      for (size_t i = 0; i < candidates_.size() && chooser_.seen_calls(); ++i) {
        if (trial || i == chooser_.chosen()) now |= 1u << i;
      }
      owner_->Use(using_, now);
      using_ = now;
    }

    static std::vector<std::string> Names(const AutoMemory& owner) {
      std::vector<std::string> names;
      for (const auto& candidate : owner.candidates_) names.emplace_back(candidate->name());
      return names;
    }

    std::shared_ptr<AutoMemory> owner_;
    AutoChooser chooser_;
    std::vector<std::unique_ptr<MethodMemory>> candidates_;
    std::mutex using_mu_;
    uint32_t using_ = 0;  // bit i: counted among candidate i's users
  };

  // A method's candidates went from `before` to `after`: a candidate that no method uses any
  // more gives back what it keeps (its pools, its cached pages), so having tried it costs nothing.
  // What they gave back to malloc stays in malloc's heap and caches, between the chosen strategy's
  // blocks, and counts in the process's RSS: malloc (glibc's, or a preloaded tcmalloc or jemalloc)
  // is asked to return its free pages once per settle that left a candidate unused.
  void Use(uint32_t before, uint32_t after) noexcept {
    bool trimmed = false;
    for (size_t i = 0; i < candidates_.size(); ++i) {
      const bool was = (before >> i & 1) != 0, is = (after >> i & 1) != 0;
      if (is && !was) users_[i].fetch_add(1, std::memory_order_relaxed);
      if (was && !is && users_[i].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        candidates_[i]->Trim();
        trimmed = true;
      }
    }
    if (trimmed) ReleaseFreeMemoryToSystem();
  }

  std::string_view name() const noexcept override { return "auto"; }
  std::unique_ptr<MethodMemory> Bind(const Message& req, const Message& resp) override {
    return std::make_unique<Method>(shared_from_this(), req, resp);
  }
  // The candidates' counters added up (each strategy fills only its own fields, except the
  // acquired/released totals). The same for a method, over its own bindings.
  MemoryStats stats() const noexcept override {
    MemoryStats total;
    for (const auto& candidate : candidates_) AddStats(total, candidate->stats());
    return total;
  }
  void Trim() noexcept override {
    for (const auto& candidate : candidates_) candidate->Trim();
  }

 private:
  const std::vector<std::shared_ptr<MessageMemory>> candidates_;
  const AutoSettings settings_;
  std::vector<std::atomic<uint32_t>> users_;  // methods that may serve with each candidate
};

}  // namespace

std::shared_ptr<MessageMemory> MakeAutoMemory(
    std::vector<std::shared_ptr<MessageMemory>> candidates, const AutoSettings& settings) {
  if (candidates.empty()) throw std::invalid_argument("auto needs at least one candidate");
  return std::make_shared<AutoMemory>(std::move(candidates), settings);
}

std::shared_ptr<MessageMemory> MakeAutoMemory(const MemoryOptions& options) {
  std::vector<std::shared_ptr<MessageMemory>> candidates;
  for (const NamedEnum<MemoryMode>& candidate : options.automatic.candidates) {
    candidates.push_back(MakeMessageMemory(candidate.value(), options, nullptr));  // validated
  }
  return MakeAutoMemory(std::move(candidates), options.automatic);
}

}  // namespace arenarpc::memory
