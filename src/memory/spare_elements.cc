#include "arenarpc/memory/spare_elements.h"

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
  if (type >= messages_.size() || messages_[type].empty()) return nullptr;
  google::protobuf::Message* m = messages_[type].back();
  messages_[type].pop_back();
  --message_count_;
  return m;
}

void SpareElements::PutMessage(size_t type, google::protobuf::Message* message) {
  std::unique_ptr<google::protobuf::Message> owned(message);  // freed if the push throws
  if (type >= messages_.size()) messages_.resize(type + 1);
  messages_[type].push_back(owned.get());
  owned.release();
  ++message_count_;
}

std::string* SpareElements::TakeString() noexcept {
  if (strings_.empty()) return nullptr;
  std::string* s = strings_.back();
  strings_.pop_back();
  return s;
}

void SpareElements::PutString(std::string* s) {
  std::unique_ptr<std::string> owned(s);
  strings_.push_back(owned.get());
  owned.release();
}

size_t SpareElements::SpaceUsed() const {
  const size_t inline_capacity = std::string().capacity();  // short strings need no heap block
  size_t bytes = strings_.capacity() * sizeof(std::string*);
  for (const std::string* s : strings_) {
    bytes += sizeof(std::string);
    if (s->capacity() > inline_capacity) bytes += s->capacity() + 1;
  }
  for (const auto& list : messages_) {
    bytes += list.capacity() * sizeof(google::protobuf::Message*);
    for (const google::protobuf::Message* m : list) bytes += m->SpaceUsedLong();
  }
  return bytes;
}

void SpareElements::Clear() noexcept {
  for (std::string* s : strings_) delete s;
  strings_.clear();
  for (auto& list : messages_) {
    for (google::protobuf::Message* m : list) delete m;
    list.clear();
  }
  message_count_ = 0;
}

}  // namespace arenarpc::memory
