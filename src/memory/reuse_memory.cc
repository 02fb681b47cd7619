// "reuse": request and response objects come from per-type ReusePools and are cleared in place
// (keeping their sub-message tree) after the call instead of destroyed.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <memory>

#include <mutex>
#include <unordered_map>

#include "arenarpc/memory/reuse_pool.h"
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
          responses_(owner_->PoolFor(resp)) {}

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
      owner_->counters_.OnAcquire();
      return MakePair(request->message.get(), response->message.get(), nullptr, request);
    }

   protected:
    void Release(Message*, Message*, Arena*, void* cookie) noexcept override {
      auto* request = static_cast<ReusePool::Entry*>(cookie);
      ReusePool::Entry* response = request->partner;
      requests_->Give(request);
      responses_->Give(response);
      owner_->counters_.OnRelease();
    }
    void Settle(Message*, bool is_response, void* cookie) noexcept override {
      auto* request = static_cast<ReusePool::Entry*>(cookie);
      if (is_response) {
        responses_->Settle(*request->partner);
      } else {
        requests_->Settle(*request);
      }
    }

    void ShapeRequest(Message*, void* cookie,
                      google::protobuf::io::ZeroCopyInputStream& wire) noexcept override {
      requests_->Shape(*static_cast<ReusePool::Entry*>(cookie), wire);
    }
    bool shapes_requests() const noexcept override { return true; }

   private:
    std::shared_ptr<ReuseMemory> owner_;
    std::shared_ptr<ReusePool> requests_;
    std::shared_ptr<ReusePool> responses_;
  };

  std::string_view name() const noexcept override { return "reuse"; }
  std::unique_ptr<MethodMemory> Bind(const Message& req, const Message& resp) override {
    return std::make_unique<Method>(shared_from_this(), req, resp);
  }
  MemoryStats stats() const noexcept override {
    MemoryStats s;
    counters_.FillStats(s);
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
};

}  // namespace

std::shared_ptr<MessageMemory> MakeReuseMemory(const MemoryOptions& options) {
  return std::make_shared<ReuseMemory>(options.reuse);
}

}  // namespace arenarpc::memory
