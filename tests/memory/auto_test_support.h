#pragma once
// What the "auto" strategy's tests share: short trials, and SlowMemory, a real strategy made slower
// by an amount of thread CPU per Acquire() (fixed, or changed by the test while calls run), so
// that which candidate "auto" must choose is known.
#include <atomic>
#include <ctime>
#include <memory>
#include <string>

#include "arenarpc/memory/message_memory.h"

namespace arenarpc::memory {

// Trials of a few calls, candidates taking turns call by call.
inline AutoSettings QuickAutoSettings() {
  AutoSettings s;
  s.warmup_calls = 2;
  s.trial_calls = 8;
  s.trial_block = 1;
  s.sample_every = 4;
  s.recheck_calls = 1000;
  return s;
}

inline uint64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

class SlowMemory final : public MessageMemory {
 public:
  SlowMemory(std::string name, std::shared_ptr<MessageMemory> inner, uint64_t burn_ns)
      : SlowMemory(std::move(name), std::move(inner),
                   std::make_shared<std::atomic<uint64_t>>(burn_ns)) {}
  // Burns what `burn_ns` holds at each Acquire(): the test may change it under load.
  SlowMemory(std::string name, std::shared_ptr<MessageMemory> inner,
             std::shared_ptr<const std::atomic<uint64_t>> burn_ns)
      : name_(std::move(name)), inner_(std::move(inner)), burn_ns_(std::move(burn_ns)) {}
  std::string_view name() const noexcept override { return name_; }
  std::unique_ptr<MethodMemory> Bind(const google::protobuf::Message& req,
                                     const google::protobuf::Message& resp) override {
    return std::make_unique<Method>(inner_->Bind(req, resp), burn_ns_);
  }
  MemoryStats stats() const noexcept override { return inner_->stats(); }
  void Trim() noexcept override { inner_->Trim(); }

 private:
  class Method final : public MethodMemory {
   public:
    Method(std::unique_ptr<MethodMemory> inner, std::shared_ptr<const std::atomic<uint64_t>> burn_ns)
        : MethodMemory(inner->request_prototype(), inner->response_prototype()),
          inner_(std::move(inner)),
          burn_ns_(std::move(burn_ns)) {}
    MessagePair Acquire() override {
      const uint64_t until = ThreadCpuNs() + burn_ns_->load(std::memory_order_relaxed);
      while (ThreadCpuNs() < until) {
      }
      return inner_->Acquire();
    }
    MemoryStats stats() const noexcept override { return inner_->stats(); }

   protected:
    void Release(google::protobuf::Message*, google::protobuf::Message*, google::protobuf::Arena*,
                 void*) noexcept override {}

   private:
    std::unique_ptr<MethodMemory> inner_;
    std::shared_ptr<const std::atomic<uint64_t>> burn_ns_;
  };

  std::string name_;
  std::shared_ptr<MessageMemory> inner_;
  std::shared_ptr<const std::atomic<uint64_t>> burn_ns_;
};

}  // namespace arenarpc::memory
