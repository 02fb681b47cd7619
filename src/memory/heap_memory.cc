// "heap": every call news its request and response and deletes them afterwards.
#include <google/protobuf/message.h>

#include <memory>

#include "memory/call_counters.h"
#include "memory/strategies.h"

namespace arenarpc::memory {
namespace {

using google::protobuf::Arena;
using google::protobuf::Message;

class HeapMemory final : public MessageMemory, public std::enable_shared_from_this<HeapMemory> {
 public:
  class Method final : public MethodMemory {
   public:
    Method(std::shared_ptr<HeapMemory> owner, const Message& req, const Message& resp)
        : MethodMemory(req, resp), owner_(std::move(owner)) {}
    MessagePair Acquire() override {
      std::unique_ptr<Message> request(request_prototype().New());
      std::unique_ptr<Message> response(response_prototype().New());
      owner_->counters_.OnAcquire();
      counters_.OnAcquire();
      return MakePair(request.release(), response.release(), nullptr, nullptr,
                      /*response_plain=*/true);
    }

    MemoryStats stats() const noexcept override {
      MemoryStats s;
      counters_.FillStats(s);
      return s;
    }

   protected:
    void Release(Message* request, Message* response, Arena*, void*) noexcept override {
      std::unique_ptr<Message> req(request), resp(response);
      owner_->counters_.OnRelease();
      counters_.OnRelease();
    }

   private:
    std::shared_ptr<HeapMemory> owner_;
    CallCounters counters_;
  };

  std::string_view name() const noexcept override { return "heap"; }
  std::unique_ptr<MethodMemory> Bind(const Message& req, const Message& resp) override {
    return std::make_unique<Method>(shared_from_this(), req, resp);
  }
  MemoryStats stats() const noexcept override {
    MemoryStats s;
    counters_.FillStats(s);
    return s;
  }

  CallCounters counters_;
};

}  // namespace

std::shared_ptr<MessageMemory> MakeHeapMemory(const MemoryOptions&) {
  return std::make_shared<HeapMemory>();
}

}  // namespace arenarpc::memory
