#include "memory/reuse/kept_tree.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/message.h>
#include <google/protobuf/unknown_field_set.h>

#include <mutex>
#include <string>
#include <unordered_map>

namespace arenarpc::memory {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::OneofDescriptor;
using google::protobuf::Reflection;

// How to clear one message type's own fields, computed once per descriptor.
struct KeptTreePlan::TypePlan {
  std::vector<const FieldDescriptor*> clear_fields;    // repeated, scalars, strings, maps
  // Singular strings without presence (proto3): erased in place, keeping their buffer. ClearField
  // would free one on the heap, and on an arena let it go to the arena until the arena dies.
  std::vector<const FieldDescriptor*> in_place_strings;
  // Singular strings with a has-bit (in clear_fields): ClearField lets one go on an arena (there
  // is no reflection call that unsets the has-bit and keeps the string): counted (LetGo).
  std::vector<const FieldDescriptor*> let_go_strings;
  std::vector<const FieldDescriptor*> message_fields;  // singular, not in a real oneof
  std::vector<const OneofDescriptor*> oneofs;
  std::vector<const FieldDescriptor*> all_fields;  // for the emptiness check
  bool has_extensions = false;
};

namespace {

using TypePlan = KeptTreePlan::TypePlan;
using Node = KeptTreePlan::Node;

// Descriptors of generated messages live for the whole process, so the plans do too.
const TypePlan& PlanFor(const Descriptor& d) {
  static std::mutex mu;
  static std::unordered_map<const Descriptor*, std::unique_ptr<TypePlan>> plans;
  std::lock_guard lock(mu);
  auto& plan = plans[&d];
  if (!plan) {
    plan = std::make_unique<TypePlan>();
    plan->has_extensions = d.extension_range_count() > 0;
    for (int i = 0; i < d.field_count(); ++i) {
      const FieldDescriptor* f = d.field(i);
      plan->all_fields.push_back(f);
      if (f->real_containing_oneof() != nullptr) continue;
      // A sub-message with a has-bit (proto2, proto3 `optional`) keeps its object through
      // ClearField (has-bit cleared, object Clear()ed in place), and its presence is the has-bit:
      // Settle must never detach it, whatever it holds. Only has-bit-less proto3 sub-messages,
      // whose presence is their pointer, are kept (and settled) here.
      const bool has_bit = f->has_optional_keyword() || f->is_required();
      const bool singular_string =
          !f->is_repeated() && f->cpp_type() == FieldDescriptor::CPPTYPE_STRING;
      if (!f->is_repeated() && f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !has_bit) {
        plan->message_fields.push_back(f);
      } else if (singular_string && !f->has_presence() &&
                 f->options().ctype() == google::protobuf::FieldOptions::STRING) {
        plan->in_place_strings.push_back(f);
      } else {
        plan->clear_fields.push_back(f);
        if (singular_string) plan->let_go_strings.push_back(f);
      }
    }
    for (int i = 0; i < d.real_oneof_decl_count(); ++i) plan->oneofs.push_back(d.oneof_decl(i));
  }
  return *plan;
}

void BuildNode(Node& node, const Descriptor& type, int depth, size_t& slots) {
  node.type = &PlanFor(type);
  if (depth >= KeptTreePlan::kMaxDepth) return;
  for (const FieldDescriptor* f : node.type->message_fields) {
    if (slots >= static_cast<size_t>(KeptTreePlan::kMaxSlots)) return;
    Node child;
    child.field = f;
    child.slot = static_cast<int>(slots++);
    BuildNode(child, *f->message_type(), depth + 1, slots);
    node.children.push_back(std::move(child));
  }
}

// A oneof's string and message members are objects of their own, which clearing the oneof lets go.
bool HeldByOneof(const FieldDescriptor& f) {
  return f.real_containing_oneof() != nullptr &&
         (f.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE ||
          f.cpp_type() == FieldDescriptor::CPPTYPE_STRING);
}

// Whether Clear() on a message of this type — reached through repeated elements or sub-messages
// with a has-bit, which the plan leaves to the generated Clear() — keeps every object of its tree:
// no maps, oneof strings or sub-messages, extensions or has-bit-less singular sub-messages, which
// Clear() frees on the heap and abandons on an arena.
bool ClearKeepsObjects(const Descriptor& d, std::unordered_map<const Descriptor*, bool>& seen) {
  if (auto it = seen.find(&d); it != seen.end()) return it->second;
  seen[&d] = true;  // a recursive type: assume so while its fields are checked
  bool keeps = d.extension_range_count() == 0;
  for (int i = 0; keeps && i < d.field_count(); ++i) {
    const FieldDescriptor& f = *d.field(i);
    if (HeldByOneof(f) || f.is_map()) {
      keeps = false;
    } else if (f.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      const bool has_bit = f.has_optional_keyword() || f.is_required();
      keeps = (f.is_repeated() || has_bit) && ClearKeepsObjects(*f.message_type(), seen);
    }
  }
  seen[&d] = keeps;
  return keeps;
}

// The same for a kept node: its has-bit-less sub-messages are the plan's (all of them must have a
// slot), the rest of its fields are cleared as above.
bool NodeKeepsObjects(const Node& node, const Descriptor& d,
                      std::unordered_map<const Descriptor*, bool>& seen) {
  if (d.extension_range_count() > 0 || node.children.size() != node.type->message_fields.size()) {
    return false;
  }
  for (int i = 0; i < d.field_count(); ++i) {
    if (HeldByOneof(*d.field(i))) return false;
  }
  for (const FieldDescriptor* f : node.type->clear_fields) {
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
        (f->is_map() || !ClearKeepsObjects(*f->message_type(), seen))) {
      return false;
    }
  }
  for (const Node& child : node.children) {
    if (!NodeKeepsObjects(child, *child.field->message_type(), seen)) return false;
  }
  return true;
}

// A stashed sub-message the content replaced: freed, or left to the arena that owns it.
void Discard(std::unique_ptr<Message>& spare) noexcept {
  if (spare && spare->GetArena() != nullptr) {
    (void)spare.release();
  } else {
    spare.reset();
  }
}

void ClearExtensions(Message& m, const Reflection& r) {
  std::vector<const FieldDescriptor*> set;
  r.ListFields(m, &set);
  for (const FieldDescriptor* f : set) {
    if (f->is_extension()) r.ClearField(&m, f);
  }
}

void ClearNode(Message& m, const Node& node, KeptTreePlan::Stash stash,
               std::vector<const Message*>& kept, size_t& let_go) {
  const Reflection& r = *m.GetReflection();
  const TypePlan& t = *node.type;
  std::string scratch;  // GetStringReference's, for string representations other than std::string
  for (const FieldDescriptor* f : t.in_place_strings) {
    // An empty (short) string moved in: libstdc++ copies it into the existing buffer.
    if (!r.GetStringReference(m, f, &scratch).empty()) r.SetString(&m, f, std::string());
  }
  if (m.GetArena() != nullptr) {
    // The string objects are in the arena's blocks (counted as the arena's size); their buffers,
    // when longer than the object's own, are on the heap.
    static const size_t kInObject = std::string().capacity();
    for (const FieldDescriptor* f : t.let_go_strings) {
      if (!r.HasField(m, f)) continue;
      const size_t capacity = r.GetStringReference(m, f, &scratch).capacity();
      if (capacity > kInObject) let_go += capacity + 1;
    }
  }
  // ClearField on a repeated field keeps the cleared elements / capacity (RepeatedPtrField::Clear).
  for (const FieldDescriptor* f : t.clear_fields) r.ClearField(&m, f);
  for (const OneofDescriptor* o : t.oneofs) r.ClearOneof(&m, o);
  size_t next_child = 0;
  for (const FieldDescriptor* f : t.message_fields) {
    const Node* child = next_child < node.children.size() && node.children[next_child].field == f
                            ? &node.children[next_child++]
                            : nullptr;
    if (child == nullptr) {  // beyond the slot limits: behave like Clear()
      r.ClearField(&m, f);
      continue;
    }
    auto& spare = stash[child->slot];
    Message* attached = nullptr;
    if (r.HasField(m, f)) {
      Discard(spare);  // the content set a fresh object; keep that one
      attached = r.MutableMessage(&m, f);
    } else if (spare) {
      attached = spare.release();
      r.UnsafeArenaSetAllocatedMessage(&m, attached, f);
    }
    if (attached != nullptr) {
      ClearNode(*attached, *child, stash, kept, let_go);
      kept.push_back(attached);
    }
  }
  if (t.has_extensions) ClearExtensions(m, r);
  if (!r.GetUnknownFields(m).empty()) r.MutableUnknownFields(&m)->Clear();
}

bool IsEmpty(const Message& m, const TypePlan& t) {
  const Reflection& r = *m.GetReflection();
  for (const FieldDescriptor* f : t.all_fields) {
    if (f->is_repeated() ? r.FieldSize(m, f) > 0 : r.HasField(m, f)) return false;
  }
  if (t.has_extensions) {
    std::vector<const FieldDescriptor*> set;
    r.ListFields(m, &set);
    if (!set.empty()) return false;
  }
  return r.GetUnknownFields(m).empty();
}

// Which kept sub-messages to detach: listed candidates, empty ones only if asked.
struct SettleRule {
  std::span<const Message* const> candidates;
  bool only_empty;
  bool any = false;  // every sub-message is a candidate
  bool Detaches(const Message& sub, const TypePlan& type) const {
    bool listed = any;
    for (const Message* c : candidates) listed = listed || c == &sub;
    return listed && (!only_empty || IsEmpty(sub, type));
  }
};

void SettleNode(Message& m, const Node& node, KeptTreePlan::Stash stash, const SettleRule& rule) {
  const Reflection& r = *m.GetReflection();
  for (const Node& child : node.children) {
    if (!r.HasField(m, child.field)) continue;
    Message& sub = *r.MutableMessage(&m, child.field);
    SettleNode(sub, child, stash, rule);
    auto& spare = stash[child.slot];
    if (!spare && rule.Detaches(sub, *child.type)) {
      spare.reset(r.UnsafeArenaReleaseMessage(&m, child.field));
    }
  }
}

}  // namespace

KeptTreePlan::KeptTreePlan(const Descriptor& root) {
  // GetUnknownFields() on a message without unknown fields returns this lazily created static.
  // Create it here, before the plan is shared between threads: its lazy init happens inside the
  // (uninstrumented) protobuf library, which ThreadSanitizer would otherwise report as a race.
  (void)google::protobuf::UnknownFieldSet::default_instance();
  BuildNode(root_, root, 0, slot_count_);
  std::unordered_map<const Descriptor*, bool> seen;
  keeps_objects_ = NodeKeepsObjects(root_, root, seen);
}
KeptTreePlan::~KeptTreePlan() = default;

size_t KeptTreePlan::Clear(Message& message, Stash stash, std::vector<const Message*>& kept) const {
  kept.clear();
  size_t let_go = 0;
  ClearNode(message, root_, stash, kept, let_go);
  return let_go;
}
void KeptTreePlan::Settle(Message& message, Stash stash,
                          std::span<const Message* const> candidates, bool only_empty) const {
  if (candidates.empty()) return;  // nothing kept, or nothing the bytes left out
  SettleNode(message, root_, stash, SettleRule{candidates, only_empty});
}
size_t KeptTreePlan::Clear(Message& message, Stash stash) const {
  std::vector<const Message*> kept;
  size_t let_go = 0;
  ClearNode(message, root_, stash, kept, let_go);
  return let_go;
}
void KeptTreePlan::Settle(Message& message, Stash stash) const {
  SettleNode(message, root_, stash, SettleRule{{}, /*only_empty=*/true, /*any=*/true});
}

}  // namespace arenarpc::memory
