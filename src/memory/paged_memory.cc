// "paged": one protobuf Arena per call whose blocks are pages from a cached page pool; the Arena
// object itself sits in its first page, so a call costs no heap allocation for arena bookkeeping.
#include <google/protobuf/arena.h>
#include <google/protobuf/message.h>

#include <memory>

#include "arenarpc/memory/cached_page_allocator.h"
#include "arenarpc/memory/paged_arena.h"
#include "memory/call_counters.h"
#include "memory/page_stats.h"
#include "memory/strategies.h"

namespace arenarpc::memory {
namespace {

using google::protobuf::Arena;
using google::protobuf::Message;

class PagedMemory final : public MessageMemory, public std::enable_shared_from_this<PagedMemory> {
 public:
  explicit PagedMemory(const MemoryOptions& o)
      : pages_(std::make_shared<CachedPageAllocator>(
            PagePoolOptions{o.page_size, o.page_cache_capacity, o.thread_cache_pages})),
        factory_(pages_) {}

  class Method final : public MethodMemory {
   public:
    Method(std::shared_ptr<PagedMemory> owner, const Message& req, const Message& resp)
        : MethodMemory(req, resp), owner_(std::move(owner)) {}
    MessagePair Acquire() override {
      PagedArenaFactory& factory = owner_->factory_;
      Arena* arena = factory.Create();
      try {
        Message* request = request_prototype().New(arena);
        Message* response = response_prototype().New(arena);
        owner_->counters_.OnAcquire();
        counters_.OnAcquire();
        return MakePair(request, response, arena, nullptr, /*response_plain=*/true);
      } catch (...) {
        factory.Destroy(arena);
        throw;
      }
    }

    MemoryStats stats() const noexcept override {
      MemoryStats s;
      counters_.FillStats(s);
      return s;
    }

   protected:
    void Release(Message*, Message*, Arena* arena, void*) noexcept override {
      owner_->factory_.Destroy(arena);
      owner_->counters_.OnRelease();
      counters_.OnRelease();
    }

   private:
    std::shared_ptr<PagedMemory> owner_;
    CallCounters counters_;
  };

  std::string_view name() const noexcept override { return "paged"; }
  std::unique_ptr<MethodMemory> Bind(const Message& req, const Message& resp) override {
    return std::make_unique<Method>(shared_from_this(), req, resp);
  }
  MemoryStats stats() const noexcept override {
    MemoryStats s;
    counters_.FillStats(s);
    FillPageStats(pages_->stats(), s);
    return s;
  }
  void Trim() noexcept override { pages_->Trim(); }

  std::shared_ptr<CachedPageAllocator> pages_;
  PagedArenaFactory factory_;
  CallCounters counters_;
};

}  // namespace

std::shared_ptr<MessageMemory> MakePagedMemory(const MemoryOptions& options) {
  return std::make_shared<PagedMemory>(options);
}

}  // namespace arenarpc::memory
