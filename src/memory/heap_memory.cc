// "heap": every call news its request and response and deletes them afterwards.
#include <google/protobuf/message.h>

#include "memory/call_counters.h"
#include "memory/strategies.h"

namespace arenarpc::memory {
namespace {

using google::protobuf::Arena;
using google::protobuf::Message;

class HeapMemory final : public MessageMemory {
 public:
  class Method final : public MethodMemory {
   public:
    Method(std::shared_ptr<HeapMemory> owner, const Message& req, const Message& resp)
        : MethodMemory(req, resp), owner_(std::move(owner)) {}
    MessagePair Acquire() override {
      std::unique_ptr<Message> request(request_prototype().New());
      std::unique_ptr<Message> response(response_prototype().New());
      owner_->counters_.OnAcquire();
      return MakePair(request.release(), response.release(), nullptr, nullptr);
    }

   protected:
    void Release(Message* request, Message* response, Arena*, void*) noexcept override {
      std::unique_ptr<Message> req(request), resp(response);
      owner_->counters_.OnRelease();
    }

   private:
    std::shared_ptr<HeapMemory> owner_;
  };

  std::string_view name() const noexcept override { return "heap"; }
  std::unique_ptr<MethodMemory> Bind(const Message& req, const Message& resp) override {
    return std::make_unique<Method>(self_.lock(), req, resp);
  }
  MemoryStats stats() const noexcept override {
    MemoryStats s;
    counters_.FillStats(s);
    return s;
  }

  std::weak_ptr<HeapMemory> self_;
  CallCounters counters_;
};

}  // namespace

std::shared_ptr<MessageMemory> MakeHeapMemory(const MemoryOptions&) {
  auto memory = std::make_shared<HeapMemory>();
  memory->self_ = memory;
  return memory;
}

}  // namespace arenarpc::memory
