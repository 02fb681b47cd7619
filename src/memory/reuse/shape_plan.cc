#include "memory/reuse/shape_plan.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/zero_copy_stream.h>
#include <google/protobuf/message.h>
#include <google/protobuf/repeated_ptr_field.h>

#include <array>
#include <memory>
#include <span>
#include <string>

#include "memory/reuse/cleared_tail.h"
#include "memory/reuse/element_moves.h"
#include "memory/reuse/wire_scanner.h"

namespace arenarpc::memory {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::RepeatedPtrField;

namespace {
constexpr int kMaxShapeDepth = 64;       // deeper sub-messages are left to the merge
constexpr uint32_t kDenseNumbers = 256;  // field numbers below this are looked up in an array
}  // namespace

struct ShapePlan::Type {
  using Kind = moves::FieldKind;
  struct Field {
    const FieldDescriptor* descriptor;
    Kind kind;
    const Type* element;    // kMessages, kSingular
    moves::FieldSlot slot;  // kMessages, kStrings
    moves::SubmessageSlot singular{descriptor};  // kSingular
  };
  size_t id = 0;             // SpareTypeId of this type
  bool strings_only = true;  // every tracked field is kStrings: scanned by WireScanner::CountAll
  std::vector<Field> fields;
  std::vector<int16_t> dense;  // field number -> index into fields, -1: not tracked
  // Field numbers below 16 (one-byte tags) -> index into fields, or fields.size() (a count slot
  // nobody reads) when not tracked: WireScanner::CountAll's table.
  std::array<uint16_t, 16> small_slots{};

  int Find(uint32_t number) const noexcept {
    if (number < dense.size()) return dense[number];
    if (number < kDenseNumbers) return -1;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (static_cast<uint32_t>(fields[i].descriptor->number()) == number)
        return static_cast<int>(i);
    }
    return -1;
  }
};

namespace {

using Type = ShapePlan::Type;
using Kind = ShapePlan::Type::Kind;

using moves::FitStrings;

// A closure, not a function: the walks in element_moves.h take it by type and inline it.
constexpr auto GatherViewOf = [](const Type::Field& f) -> moves::GatherView<Type> {
  return {&f.slot, f.kind, f.element, f.element != nullptr ? f.element->id : 0, &f.singular};
};

constexpr size_t kInlineCounts = 16;
// A count meaning: this repeated message field already had content, leave it alone (making its
// elements live and clearing them again would wipe that content).
constexpr uint32_t kHasContent = UINT32_MAX;

// Scans one message's bytes, up to `end` (WireScanner::kNoLimit: the end of the stream), making
// the elements its repeated message fields will need live in order, then fits every tracked field.
bool ShapeMessage(WireScanner& in, int64_t end, Message& m, const Type& type, SpareElements& spares,
                  std::vector<uint32_t>& scratch, std::vector<const Message*>* absent,
                  int depth) noexcept {
  const size_t n = type.fields.size();
  uint32_t inline_counts[kInlineCounts + 1] = {};  // the last: CountAll's untracked fields
  const size_t frame = scratch.size();
  if (n > kInlineCounts) {
    try {
      scratch.resize(frame + n + 1, 0);
    } catch (...) {
      return false;
    }
  }
  // Recursion may grow `scratch`: fetch the counts afresh each time.
  auto counts = [&]() -> uint32_t* {
    return n > kInlineCounts ? scratch.data() + frame : inline_counts;
  };
  for (size_t i = 0; i < n && !type.strings_only; ++i) {
    const Type::Field& f = type.fields[i];
    if (f.kind == Kind::kMessages && f.slot.Of<Message>(m).size() != 0) {
      counts()[i] = kHasContent;  // not handed out empty: shaping is for empty messages
    }
  }
  bool ok = true;
  try {
    if (type.strings_only) {
      ok = in.CountAll(end, type.small_slots.data(), counts(), [&](uint32_t number) {
        const int index = type.Find(number);
        return index >= 0 ? static_cast<size_t>(index) : n;
      });
    }
    while (!type.strings_only) {
      if (end == WireScanner::kNoLimit ? in.AtEnd() : in.position() >= end) break;
      uint32_t tag;
      if (!in.ReadVarint32(&tag) || tag == 0) {
        ok = false;
        break;
      }
      const int index = type.Find(tag >> 3);
      if (index < 0 || (tag & 7) != 2) {
        if (!in.SkipField(tag)) {
          ok = false;
          break;
        }
        continue;
      }
      const Type::Field& f = type.fields[index];
      uint32_t length;
      if (!in.ReadVarint32(&length)) {
        ok = false;
        break;
      }
      Message* sub = nullptr;
      if (counts()[index] != kHasContent) {  // a field with content: its bytes are just skipped
        ++counts()[index];
        if (f.kind == Kind::kMessages && depth < kMaxShapeDepth) {
          sub = moves::NextElement(m, f.slot, f.element->id, spares);
          moves::PrefetchSpareArrays(spares, f.element->id, *f.element, GatherViewOf);
        } else if (f.kind == Kind::kSingular && depth < kMaxShapeDepth) {
          sub = f.singular.Get(m);  // a kept one (absent: left to the merge)
        }
      }
      if (sub == nullptr) {
        if (!in.Skip(length)) {
          ok = false;
          break;
        }
        continue;
      }
      const int64_t sub_end = in.position() + length;
      if (sub_end > end) {
        ok = false;
        break;
      }
      if (!ShapeMessage(in, sub_end, *sub, *f.element, spares, scratch, absent, depth + 1) ||
          in.position() != sub_end) {
        ok = false;
        break;
      }
    }
    // Kept sub-messages the bytes leave out (see Shape()); a strings-only type has none.
    if (ok && absent != nullptr && !type.strings_only) {
      for (size_t i = 0; i < n; ++i) {
        const Type::Field& f = type.fields[i];
        if (f.kind != Kind::kSingular || counts()[i] != 0) continue;
        if (const Message* kept = f.singular.Get(m)) absent->push_back(kept);
      }
    }
  } catch (...) {  // bad_alloc while making an element live: stop shaping
    ok = false;
  }
  // Fit every tracked field, also on failure, so no element is left live. (Fitting never
  // recurses: the counts stay where they are.)
  const uint32_t* const fitted = counts();
  for (size_t i = 0; i < n; ++i) {
    const Type::Field& f = type.fields[i];
    if (f.kind == Kind::kStrings) {
      FitStrings(f.slot.Of<std::string>(m), static_cast<int>(fitted[i]), spares);
    } else if (f.kind == Kind::kMessages && fitted[i] != kHasContent) {
      auto& field = f.slot.Of<Message>(m);
      moves::ReleaseCleared(field, f.element->id, spares);
      field.Clear();  // the elements made live become cleared, in wire order
    }
  }
  if (n > kInlineCounts) scratch.resize(frame);
  return ok;
}

void TrimMessage(Message& m, const Type& type, int depth) noexcept {
  for (const Type::Field& f : type.fields) {
    if (f.kind == Kind::kStrings) {
      auto& field = f.slot.Of<std::string>(m);
      while (field.ClearedCount() > 0) delete field.ReleaseCleared();
    } else if (f.kind == Kind::kMessages) {
      auto& field = f.slot.Of<Message>(m);
      while (field.ClearedCount() > 0) delete field.ReleaseCleared();
      if (depth < kMaxShapeDepth) {
        for (Message& element : field) TrimMessage(element, *f.element, depth + 1);
      }
    } else if (depth < kMaxShapeDepth) {
      if (Message* sub = f.singular.Get(m)) TrimMessage(*sub, *f.element, depth + 1);
    }
  }
}

void ForgetStringsOf(Message& m, const Type& type, int depth) noexcept {
  for (const Type::Field& f : type.fields) {
    if (f.kind == Kind::kStrings) {
      cleared_tail::ForgetLive(f.slot.Of<std::string>(m));
    } else if (f.kind == Kind::kMessages) {
      if (depth < kMaxShapeDepth) {
        for (Message& element : f.slot.Of<Message>(m)) {
          ForgetStringsOf(element, *f.element, depth + 1);
        }
      }
    } else if (depth < kMaxShapeDepth) {
      if (Message* sub = f.singular.Get(m)) ForgetStringsOf(*sub, *f.element, depth + 1);
    }
  }
}

bool Within(const void* object, const char* begin, const char* end) noexcept {
  const auto* p = static_cast<const char*>(object);
  return p >= begin && p < end;
}

bool ContentWithinOf(Message& m, const Type& type, const char* begin, const char* end,
                     int depth) noexcept {
  for (const Type::Field& f : type.fields) {
    if (f.kind == Kind::kStrings) {
      auto& field = f.slot.Of<std::string>(m);
      const size_t live = static_cast<size_t>(field.size());
      const std::span<void* const> all = cleared_tail::AllElements(field);
      for (size_t i = 0; i < live; ++i) {
        const void* s = i < all.size() ? all[i] : &field.Get(static_cast<int>(i));
        if (!Within(s, begin, end)) return false;
      }
    } else if (f.kind == Kind::kMessages) {
      auto& field = f.slot.Of<Message>(m);
      if (field.empty()) continue;
      if (depth >= kMaxShapeDepth) return false;
      for (Message& element : field) {
        if (!Within(&element, begin, end) ||
            !ContentWithinOf(element, *f.element, begin, end, depth + 1)) {
          return false;
        }
      }
    } else if (Message* sub = f.singular.Get(m)) {
      if (depth >= kMaxShapeDepth || !Within(sub, begin, end) ||
          !ContentWithinOf(*sub, *f.element, begin, end, depth + 1)) {
        return false;
      }
    }
  }
  return true;
}

// Fields that can hold an object of their own: messages and strings.
bool HoldsObjects(const FieldDescriptor& f) {
  return f.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE ||
         f.cpp_type() == FieldDescriptor::CPPTYPE_STRING;
}

bool Tracked(const FieldDescriptor& f) {
  if (!moves::IsPlainField(f)) return false;
  // Messages, repeated or singular (groups use another wire type: skipped), and strings.
  return f.type() == FieldDescriptor::TYPE_MESSAGE || moves::IsRepeatedStringField(f);
}

}  // namespace

ShapePlan::ShapePlan(const Descriptor& root) { root_ = &TypeFor(root); }
ShapePlan::~ShapePlan() = default;

const ShapePlan::Type& ShapePlan::TypeFor(const Descriptor& d) {
  auto& slot = types_[&d];
  if (slot) return *slot;  // also breaks cycles: the entry exists before its fields are planned
  slot = std::make_unique<Type>();
  Type& type = *slot;
  type.id = SpareTypeId(d);
  if (d.extension_range_count() > 0) covers_every_object_ = false;
  for (int i = 0; i < d.field_count(); ++i) {
    const FieldDescriptor* f = d.field(i);
    if (!Tracked(*f)) {
      if (HoldsObjects(*f)) covers_every_object_ = false;
      continue;
    }
    const Kind kind = !f->is_repeated()                            ? Kind::kSingular
                      : f->type() == FieldDescriptor::TYPE_MESSAGE ? Kind::kMessages
                                                                   : Kind::kStrings;
    const Type* element = kind == Kind::kStrings ? nullptr : &TypeFor(*f->message_type());
    type.fields.push_back({f, kind, element, moves::FieldSlot(f)});
    if (kind != Kind::kStrings) type.strings_only = false;
  }
  uint32_t max_dense = 0;
  for (const Type::Field& f : type.fields) {
    const auto number = static_cast<uint32_t>(f.descriptor->number());
    if (number < kDenseNumbers) max_dense = std::max(max_dense, number + 1);
  }
  type.dense.assign(max_dense, -1);
  for (size_t i = 0; i < type.fields.size(); ++i) {
    const auto number = static_cast<uint32_t>(type.fields[i].descriptor->number());
    if (number < kDenseNumbers) type.dense[number] = static_cast<int16_t>(i);
  }
  for (uint32_t number = 0; number < type.small_slots.size(); ++number) {
    const int index = type.Find(number);
    type.small_slots[number] = static_cast<uint16_t>(index >= 0 ? index : type.fields.size());
  }
  return type;
}

bool ShapePlan::Shape(Message& message, google::protobuf::io::ZeroCopyInputStream& wire,
                      SpareElements& spares, std::vector<uint32_t>& scratch,
                      std::vector<const Message*>* absent) const noexcept {
  Gather(message, spares);
  WireScanner in(wire);
  scratch.clear();
  if (absent != nullptr) absent->clear();
  return ShapeMessage(in, WireScanner::kNoLimit, message, *root_, spares, scratch, absent, 0);
}

bool ShapePlan::ForgetStrings(Message& message) const noexcept {
  const bool stale = cleared_tail::BlocksAvailable();
  ForgetStringsOf(message, *root_, 0);
  return stale;
}

void ShapePlan::Gather(Message& message, SpareElements& spares, bool cold) const noexcept {
  moves::Gather(message, *root_, GatherViewOf, spares, kMaxShapeDepth, cold);
}

void ShapePlan::TrimExcess(Message& message) const noexcept { TrimMessage(message, *root_, 0); }

bool ShapePlan::ContentWithin(const Message& message, const char* begin,
                              const char* end) const noexcept {
  return ContentWithinOf(const_cast<Message&>(message), *root_, begin, end, 0);  // reads only
}

}  // namespace arenarpc::memory
