// "reuse": request and response objects come from per-type ReusePools and are cleared in place
// (keeping their sub-message tree) after the call instead of destroyed.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <memory>
#include <mutex>
#include <unordered_map>

#include "memory/reuse/response_mirror.h"
#include "memory/reuse/reuse_pool.h"
#include "memory/call_counters.h"
#include "memory/strategies.h"

namespace arenarpc::memory {
namespace {

using google::protobuf::Arena;
using google::protobuf::Descriptor;
using google::protobuf::Message;

class ReuseMemory final : public MessageMemory, public std::enable_shared_from_this<ReuseMemory> {
 public:
  explicit ReuseMemory(const ReuseSettings& settings) : settings_(settings) {}

  class Method final : public MethodMemory {
   public:
    Method(std::shared_ptr<ReuseMemory> owner, const Message& req, const Message& resp)
        : MethodMemory(req, resp),
          owner_(std::move(owner)),
          requests_(owner_->PoolFor(req)),
          responses_(owner_->PoolFor(resp)) {
      if (owner_->settings_.mirror_responses) {
        auto mirror = std::make_unique<ResponseMirror>(*req.GetDescriptor(), *resp.GetDescriptor(),
                                                       keep_response_tree_);
        if (mirror->useful()) mirror_ = std::move(mirror);
      }
      mirroring_.store(mirror_ != nullptr, std::memory_order_relaxed);
    }

    MessagePair Acquire() override {
      ReusePool::Entry* request = requests_->Take();
      ReusePool::Entry* response;
      try {
        response = responses_->Take();
      } catch (...) {
        requests_->Give(request);
        throw;
      }
      request->partner = response;
      if (!keep_response_tree_) responses_->DetachKept(*response);
      owner_->counters_.OnAcquire();
      return MakePair(request->message.get(), response->message.get(), nullptr, request);
    }

   protected:
    void Release(Message*, Message*, Arena*, void* cookie) noexcept override {
      auto* request = static_cast<ReusePool::Entry*>(cookie);
      ReusePool::Entry* response = request->partner;
      if (mirror_ != nullptr) CheckForecast(*request, *response);
      const ResponseMirror* fitted_by = response->fitted ? mirror_.get() : nullptr;
      requests_->Give(request);
      responses_->Give(response, fitted_by);
      owner_->counters_.OnRelease();
    }
    // Shape (fit the kept tree to the bytes, so the merge allocates nothing), merge, then settle
    // (detach kept sub-messages the bytes left empty) and fit the response to the request.
    ParseResult ParseRequest(Message* message, void* cookie, SerializedMessage& bytes) override {
      auto& request = *static_cast<ReusePool::Entry*>(cookie);
      requests_->Shape(request, bytes.Read());
      owner_->shaped_.fetch_add(1, std::memory_order_relaxed);
      const ParseResult result = MergeSerialized(*message, bytes);
      if (result != ParseResult::kOk) return result;
      requests_->Settle(request);
      if (mirroring_.load(std::memory_order_relaxed)) {
        ReusePool::Entry& response = *request.partner;
        mirror_->Fit(*response.message, *request.message, response.spares);
        response.fitted = true;
        owner_->mirrored_.fetch_add(1, std::memory_order_relaxed);
      }
      return result;
    }
    // With keep_response_submessages: detach the kept sub-messages the handler left empty (the
    // best guess at heap's bytes). Otherwise nothing kept is attached while the handler runs.
    void PrepareResponse(Message*, void* cookie) noexcept override {
      if (keep_response_tree_) responses_->Settle(*static_cast<ReusePool::Entry*>(cookie)->partner);
    }

   private:
    // Mirroring pays when responses have about their request's shape; size is the cheap witness
    // (the request's wire size from shaping, the response's from its serialization). A method
    // whose responses mostly stray beyond 4x either way stops being mirrored.
    void CheckForecast(const ReusePool::Entry& request, const ReusePool::Entry& response) noexcept {
      const int64_t in = request.shaped_bytes;
      const int64_t out = response.message->GetCachedSize();
      if (in <= 0 || out <= 0 || !mirroring_.load(std::memory_order_relaxed)) return;
      const bool follows = out <= 4 * in && in <= 4 * out;
      const uint64_t hits =
          (follows ? follows_ : strays_).fetch_add(1, std::memory_order_relaxed) + 1;
      const uint64_t other = (follows ? strays_ : follows_).load(std::memory_order_relaxed);
      if (!follows && hits >= 16 && hits > other)
        mirroring_.store(false, std::memory_order_relaxed);
    }

    std::shared_ptr<ReuseMemory> owner_;
    const bool keep_response_tree_ = owner_->settings_.keep_response_submessages;
    std::shared_ptr<ReusePool> requests_;
    std::shared_ptr<ReusePool> responses_;
    std::unique_ptr<ResponseMirror> mirror_;  // null: not asked for, or no shared fields
    std::atomic<bool> mirroring_{false};
    std::atomic<uint64_t> follows_{0}, strays_{0};
  };

  std::string_view name() const noexcept override { return "reuse"; }
  std::unique_ptr<MethodMemory> Bind(const Message& req, const Message& resp) override {
    return std::make_unique<Method>(shared_from_this(), req, resp);
  }
  MemoryStats stats() const noexcept override {
    MemoryStats s;
    counters_.FillStats(s);
    s.responses_mirrored = mirrored_.load(std::memory_order_relaxed);
    s.requests_shaped = shaped_.load(std::memory_order_relaxed);
    std::lock_guard lock(mu_);
    for (const auto& [descriptor, pool] : pools_) {
      const ReusePoolStats p = pool->stats();
      s.reuses += p.reuses;
      s.rebuilds += p.rebuilds + p.drops;
      s.trims += p.trims;
      s.objects_pooled += p.objects_pooled;
      s.retained_bytes_estimate += p.retained_bytes_estimate;
    }
    return s;
  }

  // One pool per message type, shared by every method that uses the type.
  std::shared_ptr<ReusePool> PoolFor(const Message& prototype) {
    std::lock_guard lock(mu_);
    auto& pool = pools_[prototype.GetDescriptor()];
    if (!pool) pool = std::make_shared<ReusePool>(prototype, settings_);
    return pool;
  }

 private:
  const ReuseSettings settings_;
  mutable std::mutex mu_;
  std::unordered_map<const Descriptor*, std::shared_ptr<ReusePool>> pools_;
  CallCounters counters_;
  std::atomic<uint64_t> mirrored_{0}, shaped_{0};
};

}  // namespace

std::shared_ptr<MessageMemory> MakeReuseMemory(const MemoryOptions& options) {
  return std::make_shared<ReuseMemory>(options.reuse);
}

}  // namespace arenarpc::memory
