#include "memory/reuse/spare_elements.h"

#include <google/protobuf/message.h>

#include <memory>
#include <mutex>
#include <unordered_map>

namespace arenarpc::memory {

size_t SpareTypeId(const google::protobuf::Descriptor& type) {
  static std::mutex mu;
  static std::unordered_map<const google::protobuf::Descriptor*, size_t> ids;
  std::lock_guard lock(mu);
  return ids.try_emplace(&type, ids.size()).first->second;
}

google::protobuf::Message* SpareElements::TakeMessage(size_t type) noexcept {
  return type < messages_.size() ? messages_[type].Take() : nullptr;
}

void SpareElements::SetOnArena() noexcept {
  on_arena_ = true;
  strings_.SetOnArena();
  for (auto& queue : messages_) queue.SetOnArena();
}

SpareQueue<google::protobuf::Message>& SpareElements::messages(size_t type) {
  if (type >= messages_.size()) {
    const size_t before = messages_.size();
    messages_.resize(type + 1);
    if (on_arena_) {
      for (size_t i = before; i < messages_.size(); ++i) messages_[i].SetOnArena();
    }
  }
  return messages_[type];
}

void SpareElements::PutMessage(size_t type, google::protobuf::Message* message) {
  SpareQueue<google::protobuf::Message>* queue;
  try {
    queue = &messages(type);
  } catch (...) {
    if (!on_arena_) delete message;
    throw;
  }
  queue->Put(message);
}

void SpareElements::BeginGather() noexcept {
  strings_.BeginGather();
  for (auto& queue : messages_) queue.BeginGather();
}

void SpareElements::EndGather() noexcept {
  strings_.EndGather();
  for (auto& queue : messages_) queue.EndGather();
}

size_t SpareElements::message_count() const noexcept {
  size_t n = 0;
  for (const auto& queue : messages_) n += queue.size();
  return n;
}

size_t SpareElements::SpaceUsed() const {
  const size_t inline_capacity = std::string().capacity();  // short strings need no heap block
  size_t bytes = strings_.capacity_bytes();
  strings_.ForEach([&](const std::string& s) {
    bytes += sizeof(std::string);
    if (s.capacity() > inline_capacity) bytes += s.capacity() + 1;
  });
  for (const auto& queue : messages_) {
    bytes += queue.capacity_bytes();
    queue.ForEach([&](const google::protobuf::Message& m) { bytes += m.SpaceUsedLong(); });
  }
  return bytes;
}

void SpareElements::Clear() noexcept {
  strings_.Clear();
  for (auto& queue : messages_) queue.Clear();
}

}  // namespace arenarpc::memory
