// "reuse": request and response objects come from per-type ReusePools and are cleared in place
// (keeping their sub-message tree) after the call instead of destroyed. A response whose type has
// subtrees an exact reuse cannot keep (see LosesSubtrees) is made on a paged arena per call
// instead, so that the handler builds them as cheaply as the paged strategy would. A method whose
// calls are small (ReuseSettings::min_call_bytes) has both messages made on the paged arena.
#include <google/protobuf/arena.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "arenarpc/memory/cached_page_allocator.h"
#include "arenarpc/memory/paged_arena.h"

#include "memory/reuse/response_mirror.h"
#include "memory/reuse/reuse_pool.h"
#include "memory/call_counters.h"
#include "memory/page_stats.h"
#include "memory/strategies.h"

namespace arenarpc::memory {
namespace {

using google::protobuf::Arena;
using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// Whether a response of this type, reused exactly (keep_response_submessages off), has subtrees
// its handler builds anew on every call: a singular sub-message whose presence is its pointer
// (proto3 without `optional`, a oneof member) or a map, anywhere in the type's tree.
bool LosesSubtrees(const Descriptor& root) {
  std::unordered_set<const Descriptor*> seen{&root};
  std::vector<const Descriptor*> todo{&root};
  while (!todo.empty()) {
    const Descriptor& d = *todo.back();
    todo.pop_back();
    for (int i = 0; i < d.field_count(); ++i) {
      const FieldDescriptor& f = *d.field(i);
      if (f.cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
      if (f.is_map()) return true;
      const bool has_bit = f.has_optional_keyword() || f.is_required();
      if (!f.is_repeated() && (!has_bit || f.real_containing_oneof() != nullptr)) return true;
      if (seen.insert(f.message_type()).second) todo.push_back(f.message_type());
    }
  }
  return false;
}

void AddPoolStats(const ReusePoolStats& p, MemoryStats& s) noexcept {
  s.reuses += p.reuses;
  s.rebuilds += p.rebuilds + p.drops;
  s.trims += p.trims;
  s.objects_pooled += p.objects_pooled;
  s.retained_bytes_estimate += p.retained_bytes_estimate;
}

// What the strategy counts, for itself and for each method.
struct ReuseCounters {
  CallCounters calls;
  std::atomic<uint64_t> shaped{0}, mirrored{0}, on_arena{0};

  void Fill(MemoryStats& s) const noexcept {
    calls.FillStats(s);
    s.requests_shaped = shaped.load(std::memory_order_relaxed);
    s.responses_mirrored = mirrored.load(std::memory_order_relaxed);
    s.calls_on_arena = on_arena.load(std::memory_order_relaxed);
  }
};

class ReuseMemory final : public MessageMemory, public std::enable_shared_from_this<ReuseMemory> {
 public:
  explicit ReuseMemory(const MemoryOptions& options)
      : settings_(options.reuse),
        page_options_{options.page_size, options.page_cache_capacity,
                      options.thread_cache_pages} {}

  class Method final : public MethodMemory {
   public:
    Method(std::shared_ptr<ReuseMemory> owner, const Message& req, const Message& resp)
        : MethodMemory(req, resp),
          owner_(std::move(owner)),
          requests_(owner_->PoolFor(req, /*requests=*/true)),
          responses_(owner_->PoolFor(resp, /*requests=*/false)) {
      if (owner_->settings_.min_call_bytes > 0) small_call_arenas_ = &owner_->PagedArenas();
      if (owner_->settings_.arena_responses && !keep_response_tree_ &&
          LosesSubtrees(*resp.GetDescriptor())) {
        arenas_ = &owner_->PagedArenas();
      } else if (owner_->settings_.mirror_responses) {
        auto mirror = std::make_unique<ResponseMirror>(*req.GetDescriptor(), *resp.GetDescriptor(),
                                                       keep_response_tree_);
        if (mirror->useful()) mirror_ = std::move(mirror);
      }
      mirroring_.store(mirror_ != nullptr, std::memory_order_relaxed);
    }

    MessagePair Acquire() override {
      if (small_call_arenas_ != nullptr && SmallCalls()) return AcquireOnArena();
      ReusePool::Entry* request = requests_->Take();
      if (arenas_ != nullptr) return AcquireWithArenaResponse(request);
      ReusePool::Entry* response;
      try {
        response = responses_->Take();
      } catch (...) {
        requests_->Give(request);
        throw;
      }
      request->partner = response;
      if (!keep_response_tree_) responses_->DetachKept(*response);
      owner_->counters_.calls.OnAcquire();
      counters_.calls.OnAcquire();
      return MakePair(request->message.get(), response->message.get(), nullptr, request);
    }

    MemoryStats stats() const noexcept override {
      MemoryStats s;
      counters_.Fill(s);
      AddPoolStats(requests_->stats(), s);
      AddPoolStats(responses_->stats(), s);
      return s;
    }

   protected:
    void Release(Message*, Message* response_message, Arena* pair_arena,
                 void* cookie) noexcept override {
      Observe(response_bytes_, response_message->GetCachedSize());
      if (cookie == nullptr) {  // a small call: both messages on the arena
        small_call_arenas_->Destroy(pair_arena);
        owner_->counters_.calls.OnRelease();
        counters_.calls.OnRelease();
        return;
      }
      auto* request = static_cast<ReusePool::Entry*>(cookie);
      if (Arena* arena = std::exchange(request->response_arena, nullptr)) {
        requests_->Give(request);
        arenas_->Destroy(arena);  // the response with it
        owner_->counters_.calls.OnRelease();
        counters_.calls.OnRelease();
        return;
      }
      ReusePool::Entry* response = request->partner;
      if (mirror_ != nullptr) CheckForecast(*request, *response);
      const ResponseMirror* fitted_by = response->fitted ? mirror_.get() : nullptr;
      requests_->Give(request);
      responses_->Give(response, fitted_by);
      owner_->counters_.calls.OnRelease();
      counters_.calls.OnRelease();
    }
    // Shape (fit the kept tree to the bytes, so the merge allocates nothing), merge, then settle
    // (detach kept sub-messages the bytes left empty) and fit the response to the request.
    ParseResult ParseRequest(Message* message, void* cookie, SerializedMessage& bytes) override {
      Observe(request_bytes_, static_cast<int64_t>(bytes.size()));
      if (cookie == nullptr) return MergeSerialized(*message, bytes);  // a fresh arena message
      auto& request = *static_cast<ReusePool::Entry*>(cookie);
      requests_->Shape(request, bytes.Read());
      owner_->counters_.shaped.fetch_add(1, std::memory_order_relaxed);
      counters_.shaped.fetch_add(1, std::memory_order_relaxed);
      const ParseResult result = MergeSerialized(*message, bytes);
      if (result != ParseResult::kOk) return result;
      requests_->Settle(request);
      if (mirroring_.load(std::memory_order_relaxed)) {
        ReusePool::Entry& response = *request.partner;
        mirror_->Fit(*response.message, *request.message, response.spares);
        response.fitted = true;
        owner_->counters_.mirrored.fetch_add(1, std::memory_order_relaxed);
        counters_.mirrored.fetch_add(1, std::memory_order_relaxed);
      }
      return result;
    }
    // With keep_response_submessages: detach the kept sub-messages the handler left empty (the
    // best guess at heap's bytes). Otherwise nothing kept is attached while the handler runs.
    void PrepareResponse(Message*, void* cookie) noexcept override {
      if (keep_response_tree_) responses_->Settle(*static_cast<ReusePool::Entry*>(cookie)->partner);
    }

    std::optional<uint64_t> HeldBytes(const Message*, const Message*, const Arena* pair_arena,
                                      void* cookie) const noexcept override {
      if (cookie == nullptr) return pair_arena->SpaceAllocated();  // a small call
      const auto& request = *static_cast<const ReusePool::Entry*>(cookie);
      const std::optional<uint64_t> held = ReusePool::HeldBytes(request);
      const std::optional<uint64_t> response =
          request.response_arena != nullptr
              ? std::optional<uint64_t>(request.response_arena->SpaceAllocated())
              : ReusePool::HeldBytes(*request.partner);
      if (!held || !response) return std::nullopt;
      return *held + *response;
    }

   private:
    // Running means of the wire sizes (a sixteenth of each new size; -1 until the first). Plain
    // loads and stores: a lost update between threads only delays the mean a little.
    static void Observe(std::atomic<int64_t>& mean, int64_t bytes) noexcept {
      if (bytes <= 0) return;  // a response not serialized (failed call), or an empty message
      const int64_t old = mean.load(std::memory_order_relaxed);
      mean.store(old < 0 ? bytes : old + (bytes - old) / 16, std::memory_order_relaxed);
    }
    bool SmallCalls() const noexcept {
      const int64_t in = request_bytes_.load(std::memory_order_relaxed);
      const int64_t out = response_bytes_.load(std::memory_order_relaxed);
      return in >= 0 && out >= 0 &&
             static_cast<uint64_t>(in + out) < owner_->settings_.min_call_bytes;
    }

    MessagePair AcquireOnArena() {
      Arena* arena = small_call_arenas_->Create();
      try {
        Message* request = request_prototype().New(arena);
        Message* response = response_prototype().New(arena);
        owner_->counters_.calls.OnAcquire();
        counters_.calls.OnAcquire();
        owner_->counters_.on_arena.fetch_add(1, std::memory_order_relaxed);
        counters_.on_arena.fetch_add(1, std::memory_order_relaxed);
        return MakePair(request, response, arena, nullptr, /*response_plain=*/true);
      } catch (...) {
        small_call_arenas_->Destroy(arena);
        throw;
      }
    }

    MessagePair AcquireWithArenaResponse(ReusePool::Entry* request) {
      Arena* arena = nullptr;
      Message* response;
      try {
        arena = arenas_->Create();
        response = response_prototype().New(arena);
      } catch (...) {
        arenas_->Destroy(arena);
        requests_->Give(request);
        throw;
      }
      request->partner = nullptr;
      request->response_arena = arena;
      owner_->counters_.calls.OnAcquire();
      counters_.calls.OnAcquire();
      return MakePair(request->message.get(), response, nullptr, request);
    }

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
    PagedArenaFactory* arenas_ = nullptr;      // set: responses are made on a paged arena
    PagedArenaFactory* small_call_arenas_ = nullptr;  // set: min_call_bytes > 0
    std::atomic<int64_t> request_bytes_{-1}, response_bytes_{-1};
    std::atomic<bool> mirroring_{false};
    std::atomic<uint64_t> follows_{0}, strays_{0};
    ReuseCounters counters_;
  };

  std::string_view name() const noexcept override { return "reuse"; }
  std::unique_ptr<MethodMemory> Bind(const Message& req, const Message& resp) override {
    return std::make_unique<Method>(shared_from_this(), req, resp);
  }
  MemoryStats stats() const noexcept override {
    MemoryStats s;
    counters_.Fill(s);
    std::lock_guard lock(mu_);
    if (arena_pages_) FillPageStats(arena_pages_->stats(), s);  // its paged arenas
    for (const auto& [descriptor, pool] : pools_) AddPoolStats(pool->stats(), s);
    return s;
  }
  void Trim() noexcept override {
    std::lock_guard lock(mu_);
    for (const auto& [descriptor, pool] : pools_) pool->Trim();
    if (arena_pages_) arena_pages_->Trim();
  }

  // The strategy's paged arenas (responses reuse cannot keep, small calls), made when a method
  // first needs them (a factory takes one of PagedArenaFactory::kMaxFactories slots).
  PagedArenaFactory& PagedArenas() {
    std::lock_guard lock(mu_);
    if (!arena_factory_) {
      arena_pages_ = std::make_shared<CachedPageAllocator>(page_options_);
      arena_factory_ = std::make_unique<PagedArenaFactory>(arena_pages_);
    }
    return *arena_factory_;
  }

  // One pool per message type and role, shared by every method that uses the type so. Objects
  // live on arenas of their own where the type allows (ReusePool's on_arena), on the conditions
  // of their role: only the strategy fills a request, while a response is the handler's to change.
  std::shared_ptr<ReusePool> PoolFor(const Message& prototype, bool requests) {
    std::lock_guard lock(mu_);
    auto& pool = pools_[{prototype.GetDescriptor(), requests}];
    if (!pool) {
      pool = std::make_shared<ReusePool>(
          prototype, settings_, requests ? settings_.request_arenas : settings_.response_arenas,
          requests ? ReusePool::FilledBy::kParse : ReusePool::FilledBy::kHandler);
    }
    return pool;
  }

 private:
  const ReuseSettings settings_;
  const PagePoolOptions page_options_;
  mutable std::mutex mu_;
  std::shared_ptr<CachedPageAllocator> arena_pages_;
  std::unique_ptr<PagedArenaFactory> arena_factory_;
  std::map<std::pair<const Descriptor*, bool>, std::shared_ptr<ReusePool>> pools_;
  ReuseCounters counters_;
};

}  // namespace

std::shared_ptr<MessageMemory> MakeReuseMemory(const MemoryOptions& options) {
  return std::make_shared<ReuseMemory>(options);
}

}  // namespace arenarpc::memory
