#include "arenarpc/memory/message_memory.h"

namespace arenarpc::memory {

MessagePair& MessagePair::operator=(MessagePair&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = std::exchange(other.owner_, nullptr);
    request_ = std::exchange(other.request_, nullptr);
    response_ = std::exchange(other.response_, nullptr);
    arena_ = std::exchange(other.arena_, nullptr);
    cookie_ = std::exchange(other.cookie_, nullptr);
  }
  return *this;
}

void MessagePair::Release() noexcept {
  if (MethodMemory* owner = std::exchange(owner_, nullptr)) {
    owner->Release(std::exchange(request_, nullptr), std::exchange(response_, nullptr),
                   std::exchange(arena_, nullptr), std::exchange(cookie_, nullptr));
  }
}

void MessagePair::SettleRequest() const noexcept {
  if (owner_ != nullptr) owner_->Settle(request_, /*is_response=*/false, cookie_);
}

void MessagePair::SettleResponse() const noexcept {
  if (owner_ != nullptr) owner_->Settle(response_, /*is_response=*/true, cookie_);
}

void MessagePair::ShapeRequest(google::protobuf::io::ZeroCopyInputStream& wire) const noexcept {
  if (owner_ != nullptr) owner_->ShapeRequest(request_, cookie_, wire);  // no-op unless reuse
}

bool MessagePair::shapes_requests() const noexcept {
  return owner_ != nullptr && owner_->shapes_requests();
}

MessagePair MethodMemory::MakePair(google::protobuf::Message* request,
                                   google::protobuf::Message* response,
                                   google::protobuf::Arena* arena, void* cookie) noexcept {
  MessagePair pair;
  pair.owner_ = this;
  pair.request_ = request;
  pair.response_ = response;
  pair.arena_ = arena;
  pair.cookie_ = cookie;
  return pair;
}

}  // namespace arenarpc::memory
