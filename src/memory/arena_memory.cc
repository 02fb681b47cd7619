// "arena": one protobuf Arena per call with heap blocks (start/max block size from ArenaSettings),
// as brpc and tRPC-cpp do it.
#include <google/protobuf/arena.h>
#include <google/protobuf/message.h>

#include <memory>

#include "memory/call_counters.h"
#include "memory/strategies.h"

namespace arenarpc::memory {
namespace {

using google::protobuf::Arena;
using google::protobuf::ArenaOptions;
using google::protobuf::Message;

class ArenaMemory final : public MessageMemory, public std::enable_shared_from_this<ArenaMemory> {
 public:
  explicit ArenaMemory(const ArenaSettings& settings) {
    options_.start_block_size = settings.start_block_size;
    options_.max_block_size = settings.max_block_size;
  }

  class Method final : public MethodMemory {
   public:
    Method(std::shared_ptr<ArenaMemory> owner, const Message& req, const Message& resp)
        : MethodMemory(req, resp), owner_(std::move(owner)) {}
    MessagePair Acquire() override {
      auto arena = std::make_unique<Arena>(owner_->options_);
      Message* request = request_prototype().New(arena.get());
      Message* response = response_prototype().New(arena.get());
      owner_->counters_.OnAcquire();
      counters_.OnAcquire();
      return MakePair(request, response, arena.release(), nullptr, /*response_plain=*/true);
    }

    MemoryStats stats() const noexcept override {
      MemoryStats s;
      counters_.FillStats(s);
      return s;
    }

   protected:
    void Release(Message*, Message*, Arena* arena, void*) noexcept override {
      std::unique_ptr<Arena> owned(arena);  // frees both messages with it
      owner_->counters_.OnRelease();
      counters_.OnRelease();
    }

   private:
    std::shared_ptr<ArenaMemory> owner_;
    CallCounters counters_;
  };

  std::string_view name() const noexcept override { return "arena"; }
  std::unique_ptr<MethodMemory> Bind(const Message& req, const Message& resp) override {
    return std::make_unique<Method>(shared_from_this(), req, resp);
  }
  MemoryStats stats() const noexcept override {
    MemoryStats s;
    counters_.FillStats(s);
    return s;
  }

  ArenaOptions options_;
  CallCounters counters_;
};

}  // namespace

std::shared_ptr<MessageMemory> MakeArenaMemory(const MemoryOptions& options) {
  return std::make_shared<ArenaMemory>(options.arena);
}

}  // namespace arenarpc::memory
