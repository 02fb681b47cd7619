#pragma once
// grpc::MessageAllocator on top of arenarpc's message memory strategies.
//
//   std::string error;
//   auto alloc = arenarpc::grpc_memory::allocator<EchoRequest, EchoResponse>("reuse", options,
//                                                                             &error);
//   if (!alloc) { ... error says why ... }
//   service.SetMessageAllocatorFor_Echo(alloc.get());   // alloc must outlive the server
//
// Each call's request and response come from one MessagePair of the strategy (heap | arena |
// paged | reuse) and go back to it when gRPC calls the holder's Release(), on whichever thread.
// On this path gRPC parses and serializes the messages itself, so the strategy only provides them:
// the response is prepared (MessagePair::PrepareResponse) while still empty, and the reuse
// strategy keeps no singular sub-message of it. ServiceMemory::Serve() (service_memory.h) hands
// both steps to the strategy instead and keeps both messages' trees (docs/grpc.md).

#include <google/protobuf/message.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/message_allocator.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "arenarpc/memory/message_memory.h"

namespace arenarpc::grpc_memory {

// Holders handed to gRPC and returned by it; equal after the server has shut down.
struct HolderStats {
  uint64_t allocated = 0;
  uint64_t released = 0;
  // Of the released: messages returned when the reply was serialized (release_at_serialize.h).
  uint64_t released_at_serialize = 0;
};

// The type-independent part of an allocator: one method's binding to a strategy plus counters.
class MethodAllocatorCore {
 public:
  MethodAllocatorCore(std::shared_ptr<memory::MessageMemory> memory,
                      const google::protobuf::Message& request_prototype,
                      const google::protobuf::Message& response_prototype);
  MethodAllocatorCore(const MethodAllocatorCore&) = delete;
  MethodAllocatorCore& operator=(const MethodAllocatorCore&) = delete;

  memory::MessagePair Acquire();
  void CountRelease() noexcept { released_.fetch_add(1, std::memory_order_release); }
  void CountReleaseAtSerialize() noexcept {
    released_at_serialize_.fetch_add(1, std::memory_order_relaxed);
  }

  HolderStats holder_stats() const noexcept;
  memory::MemoryStats memory_stats() const noexcept { return memory_->stats(); }
  const memory::MessageMemory& memory() const noexcept { return *memory_; }

 private:
  std::shared_ptr<memory::MessageMemory> memory_;
  std::unique_ptr<memory::MethodMemory> method_;
  std::atomic<uint64_t> allocated_{0};
  std::atomic<uint64_t> released_{0};
  std::atomic<uint64_t> released_at_serialize_{0};
};

// The per-call state behind a holder, reached through
// CallbackServerContext::GetRpcAllocatorState() (release_at_serialize.h).
class CallMessages {
 public:
  // Returns the messages to the strategy before gRPC releases the holder (release_at_serialize.h);
  // the holder's Release() then only ends the holder.
  virtual void ReleaseAtSerialize() noexcept = 0;

 protected:
  ~CallMessages() = default;
};

// Kept for source compatibility; does nothing. Responses are prepared for serialization by the
// adapter itself (ServiceMemory::Serve, MessageAllocator), never by handlers.
inline void SettleResponse(::grpc::CallbackServerContext* /*context*/) noexcept {}

// One call's pair as gRPC holds it; `Served` is the response type gRPC serializes (Response, or
// PreparedResponse<Response> for ServiceMemory::Serve). The derived holder sets the response.
template <class Request, class Served>
class CallHolder : public ::grpc::MessageHolder<Request, Served>, public CallMessages {
 public:
  CallHolder(memory::MessagePair pair, MethodAllocatorCore* core)
      : pair_(std::move(pair)), core_(core) {
    // Bind() was given a Request prototype, so the strategy created this type.
    this->set_request(static_cast<Request*>(pair_.request()));
  }
  void Release() override {
    pair_.Release();
    core_->CountRelease();
    delete this;  // gRPC's holder contract: Release() ends the holder's life
  }
  void ReleaseAtSerialize() noexcept override {
    if (!pair_) return;
    pair_.Release();
    core_->CountReleaseAtSerialize();
  }
  const memory::MessagePair& pair() const noexcept { return pair_; }

 private:
  memory::MessagePair pair_;
  MethodAllocatorCore* core_;
};

// What ServiceMemory needs from an allocator of any message types.
class AllocatorBase {
 public:
  virtual ~AllocatorBase() = default;
  virtual HolderStats holder_stats() const noexcept = 0;
};

// A grpc::MessageAllocator for one method. Thread-safe; must outlive every holder it handed out
// (i.e. the server: gRPC's rule for allocators).
template <class Request, class Response>
class MessageAllocator final : public ::grpc::MessageAllocator<Request, Response>,
                               public AllocatorBase {
  static_assert(std::is_base_of_v<google::protobuf::Message, Request> &&
                    std::is_base_of_v<google::protobuf::Message, Response>,
                "arenarpc::grpc_memory::MessageAllocator needs generated (non-lite) protobuf messages");

 public:
  explicit MessageAllocator(std::shared_ptr<memory::MessageMemory> memory)
      : core_(std::move(memory), Request::default_instance(), Response::default_instance()) {}

  // One call's messages; gRPC returns it through Release() on any thread.
  class Holder final : public CallHolder<Request, Response> {
   public:
    Holder(memory::MessagePair pair, MethodAllocatorCore* core)
        : CallHolder<Request, Response>(std::move(pair), core) {
      // Bind() was given a Response prototype, so the strategy created this type.
      this->set_response(static_cast<Response*>(this->pair().response()));
      // gRPC serializes this response with no step in between for the strategy: prepare it now,
      // empty, so whatever the handler writes serializes as with heap.
      this->pair().PrepareResponse();
    }
  };

  ::grpc::MessageHolder<Request, Response>* AllocateMessages() override { return Allocate(); }

  Holder* Allocate() {
    // gRPC takes the holder and hands it back through Release(); it cannot take a smart pointer.
    return std::make_unique<Holder>(core_.Acquire(), &core_).release();
  }

  HolderStats holder_stats() const noexcept override { return core_.holder_stats(); }
  memory::MemoryStats memory_stats() const noexcept { return core_.memory_stats(); }
  const memory::MessageMemory& memory() const noexcept { return core_.memory(); }

 private:
  MethodAllocatorCore core_;
};

// True for "default" (gRPC's own allocation); otherwise the name must be a strategy.
inline bool IsDefaultMode(std::string_view mode) noexcept { return mode == "default"; }

// Set-up functions (docs/api-conventions.md, "Errors"): an unknown mode or invalid options make
// them return nullptr with the reason in *error (when `error` is not nullptr); they never throw
// std::invalid_argument.
//
// Builds a strategy by name: "heap", "arena", "paged", "reuse" or "auto"; anything else is an
// error (including "default", which has no allocator: pass nullptr to gRPC).
std::shared_ptr<memory::MessageMemory> MakeStrategy(std::string_view mode,
                                                    const memory::MemoryOptions& options,
                                                    std::string* error);

// One-line form: an allocator with its own strategy. The caller owns it and keeps it alive for
// the server's lifetime. nullptr with *error left empty for "default"
// (SetMessageAllocatorFor_X(nullptr) keeps gRPC's own allocation); nullptr with *error set for
// an unknown mode or bad options.
template <class Request, class Response>
std::unique_ptr<MessageAllocator<Request, Response>> allocator(
    std::string_view mode, const memory::MemoryOptions& options, std::string* error) {
  if (IsDefaultMode(mode)) return nullptr;
  std::shared_ptr<memory::MessageMemory> strategy = MakeStrategy(mode, options, error);
  if (strategy == nullptr) return nullptr;
  return std::make_unique<MessageAllocator<Request, Response>>(std::move(strategy));
}

// The throwing spellings (std::invalid_argument), deprecated for one release.
[[deprecated("use MakeStrategy(mode, options, &error)")]] std::shared_ptr<memory::MessageMemory>
MakeStrategy(std::string_view mode, const memory::MemoryOptions& options);
template <class Request, class Response>
[[deprecated("use allocator<Request, Response>(mode, options, &error)")]]
std::unique_ptr<MessageAllocator<Request, Response>> allocator(
    std::string_view mode, const memory::MemoryOptions& options = {}) {
  std::string error;
  auto made = allocator<Request, Response>(mode, options, &error);
  if (!error.empty()) throw std::invalid_argument(error);
  return made;
}

}  // namespace arenarpc::grpc_memory
