#include "arenarpc/memory/message_memory.h"

#include <google/protobuf/arena.h>

namespace arenarpc::memory {

MessagePair& MessagePair::operator=(MessagePair&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = std::exchange(other.owner_, nullptr);
    request_ = std::exchange(other.request_, nullptr);
    response_ = std::exchange(other.response_, nullptr);
    arena_ = std::exchange(other.arena_, nullptr);
    cookie_ = std::exchange(other.cookie_, nullptr);
    response_plain_ = other.response_plain_;
  }
  return *this;
}

void MessagePair::Release() noexcept {
  if (MethodMemory* owner = std::exchange(owner_, nullptr)) {
    owner->Release(std::exchange(request_, nullptr), std::exchange(response_, nullptr),
                   std::exchange(arena_, nullptr), std::exchange(cookie_, nullptr));
  }
}

ParseResult MessagePair::ParseRequest(SerializedMessage& bytes) const {
  return owner_->ParseRequest(request_, cookie_, bytes);
}

void MessagePair::PrepareResponse() const noexcept {
  if (owner_ != nullptr) owner_->PrepareResponse(response_, cookie_);
}

std::optional<uint64_t> MessagePair::held_bytes() const noexcept {
  if (owner_ == nullptr) return std::nullopt;
  return owner_->HeldBytes(request_, response_, arena_, cookie_);
}

std::optional<uint64_t> MethodMemory::HeldBytes(const google::protobuf::Message*,
                                                const google::protobuf::Message*,
                                                const google::protobuf::Arena* arena,
                                                void*) const noexcept {
  if (arena == nullptr) return std::nullopt;
  return arena->SpaceAllocated();
}

ParseResult MethodMemory::ParseRequest(google::protobuf::Message* request, void*,
                                       SerializedMessage& bytes) {
  return MergeSerialized(*request, bytes);
}

MessagePair MethodMemory::MakePair(google::protobuf::Message* request,
                                   google::protobuf::Message* response,
                                   google::protobuf::Arena* arena, void* cookie,
                                   bool response_plain) noexcept {
  MessagePair pair;
  pair.owner_ = this;
  pair.request_ = request;
  pair.response_ = response;
  pair.arena_ = arena;
  pair.cookie_ = cookie;
  pair.response_plain_ = response_plain;
  return pair;
}

}  // namespace arenarpc::memory
