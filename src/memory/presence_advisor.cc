#include "memory/presence_advisor.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>

#include <algorithm>
#include <string>

#include "util/sampling.h"

namespace arenarpc::memory {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::Message;

constexpr int kMaxDepth = 32;
constexpr uint64_t kFirstCalls = 4;
constexpr uint64_t kObserveEvery = 4096;

bool NeedsOptional(const FieldDescriptor& f) {
  return f.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !f.is_repeated() &&
         f.file()->syntax() == FileDescriptor::SYNTAX_PROTO3 && !f.has_optional_keyword() &&
         f.real_containing_oneof() == nullptr;
}

std::string TypeName(const FieldDescriptor& f) {
  const Descriptor& type = *f.message_type();
  return type.file()->package() == f.containing_type()->file()->package() ? type.name()
                                                                          : type.full_name();
}

}  // namespace

PresenceAdvisor::PresenceAdvisor(const Descriptor& response) {
  std::vector<const Descriptor*> pending{&response};
  while (!pending.empty()) {
    const Descriptor* type = pending.back();
    pending.pop_back();
    if (types_.count(type) != 0) continue;
    TypeFields& fields = types_[type];
    for (int i = 0; i < type->field_count(); ++i) {
      const FieldDescriptor* f = type->field(i);
      if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || f->is_map()) continue;
      fields.message_fields.push_back(f);
      pending.push_back(f->message_type());
      if (NeedsOptional(*f)) {
        index_.emplace(f, fields_.size());
        fields_.push_back(f);
      }
    }
  }
  held_.assign(fields_.size(), 0);
}

void PresenceAdvisor::Visit(const Message& message, int depth, std::vector<uint64_t>& held) const {
  if (depth > kMaxDepth) return;
  auto it = types_.find(message.GetDescriptor());
  if (it == types_.end()) return;  // a type outside the response's tree (an extension's)
  const auto* reflection = message.GetReflection();
  for (const FieldDescriptor* f : it->second.message_fields) {
    if (f->is_repeated()) {
      const int n = reflection->FieldSize(message, f);
      for (int i = 0; i < n; ++i)
        Visit(reflection->GetRepeatedMessage(message, f, i), depth + 1, held);
    } else if (reflection->HasField(message, f)) {
      const Message& sub = reflection->GetMessage(message, f);
      if (auto advised = index_.find(f); advised != index_.end()) {
        held[advised->second] += sub.SpaceUsedLong();
      }
      Visit(sub, depth + 1, held);
    }
  }
}

void PresenceAdvisor::Observe(const Message& response) noexcept {
  if (fields_.empty()) return;
  // The first calls, then at random one in kObserveEvery (no shared write on the common path).
  if (first_calls_.load(std::memory_order_relaxed) < kFirstCalls) {
    if (first_calls_.fetch_add(1, std::memory_order_relaxed) >= kFirstCalls) return;
  } else if (!util::OneIn(kObserveEvery)) {
    return;
  }
  std::vector<uint64_t> held(fields_.size(), 0);
  Visit(response, 0, held);
  const uint64_t total = response.SpaceUsedLong();
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < held.size(); ++i) held_[i] += held[i];
  total_ += total;
}

std::vector<PresenceAdvice> PresenceAdvisor::Report() const {
  std::vector<PresenceAdvice> advice;
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < fields_.size(); ++i) {
    const FieldDescriptor& f = *fields_[i];
    PresenceAdvice a;
    a.field = f.full_name();
    a.declared = TypeName(f) + " " + f.name() + " = " + std::to_string(f.number()) + ";";
    a.suggested = "optional " + a.declared;
    a.share = total_ == 0 ? 0 : static_cast<double>(held_[i]) / static_cast<double>(total_);
    advice.push_back(std::move(a));
  }
  std::stable_sort(
      advice.begin(), advice.end(),
      [](const PresenceAdvice& a, const PresenceAdvice& b) { return a.share > b.share; });
  return advice;
}

}  // namespace arenarpc::memory
