#pragma once
// Moving cleared repeated-field elements between a message and its SpareElements: shared by
// ShapePlan (fitting a request to its wire bytes) and ResponseMirror (fitting a response to its
// request). Internal to the memory engine.

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/message.h>
#include <google/protobuf/repeated_ptr_field.h>

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "memory/reuse/spare_elements.h"
#include "memory/reuse/cleared_tail.h"

namespace arenarpc::memory::moves {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::RepeatedPtrField;

// The fields a fitter tracks: repeated messages, repeated strings, singular messages.
enum class FieldKind : uint8_t { kMessages, kStrings, kSingular };

// Fields whose elements these helpers can move: no extensions, oneof members or maps (their storage
// is not a plain repeated/singular field).
inline bool IsPlainField(const FieldDescriptor& f) {
  return !f.is_extension() && f.real_containing_oneof() == nullptr && !f.is_map();
}

// Repeated string/bytes fields stored as RepeatedPtrField<std::string> (default ctype).
inline bool IsRepeatedStringField(const FieldDescriptor& f) {
  return f.is_repeated() && f.cpp_type() == FieldDescriptor::CPPTYPE_STRING &&
         f.options().ctype() == google::protobuf::FieldOptions::STRING;
}

// Where one tracked repeated field sits in its message objects. Reflection (GetReflection, then
// MutableRepeatedPtrField) costs a few hundred instructions a call, and fitting one call of the
// workload makes ~1,200 such calls. A field's offset is the same in every object of one class, and
// every message a plan meets of one type was made by one class (a pool's objects all come from its
// prototype, their sub-messages from their parents), so the slot learns the offset from the first
// object it meets, through reflection, and adds it to the object's address from then on. Plans are
// shared by threads: the offset is an atomic (any thread learns the same value).
//
// Reflection's direct RepeatedPtrField access is deprecated in favour of RepeatedFieldRef, which
// has no ClearedCount/AddCleared/ReleaseCleared; protobuf 3.21 still supports it for generated
// (and dynamic) messages, and the cleared-element calls are the whole point here.
class FieldSlot {
 public:
  explicit FieldSlot(const FieldDescriptor* field) noexcept : field_(field) {}
  FieldSlot(const FieldSlot& other) noexcept
      : field_(other.field_), offset_(other.offset_.load(std::memory_order_relaxed)) {}
  FieldSlot& operator=(const FieldSlot&) = delete;

  const FieldDescriptor* field() const noexcept { return field_; }

  template <class T>
  RepeatedPtrField<T>& Of(Message& m) const {
    const std::ptrdiff_t offset = offset_.load(std::memory_order_relaxed);
    if (offset < 0) return Learn<T>(m);
    auto& field = *reinterpret_cast<RepeatedPtrField<T>*>(reinterpret_cast<char*>(&m) + offset);
    assert(&field == ByReflection<T>(m) && "a plan met two classes of one message type");
    return field;
  }
  template <class T>
  const RepeatedPtrField<T>& Of(const Message& m) const {  // never writes to `m`
    return Of<T>(const_cast<Message&>(m));
  }

 private:
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  template <class T>
  RepeatedPtrField<T>* ByReflection(Message& m) const {
    return m.GetReflection()->template MutableRepeatedPtrField<T>(&m, field_);
  }
#pragma GCC diagnostic pop
  template <class T>
  RepeatedPtrField<T>& Learn(Message& m) const {
    RepeatedPtrField<T>* field = ByReflection<T>(m);
    offset_.store(reinterpret_cast<char*>(field) - reinterpret_cast<char*>(&m),
                  std::memory_order_relaxed);
    return *field;
  }

  const FieldDescriptor* field_;
  mutable std::atomic<std::ptrdiff_t> offset_{-1};
};

// Where one singular message field's pointer (and has-bit, if it has one) sits in its message
// objects. HasField and MutableMessage through reflection cost a few hundred instructions (its
// GetReflection() alone runs a call_once), paid for every message a walk visits. The layout is
// learned once, from a probe object of the class met first (New()), by comparing the probe's bytes
// before setting the field, after, and after ClearField: the pointer slot is where the
// sub-message's address appeared; a has-bit is the one bit that ClearField cleared while keeping
// the object. Any other pattern (another protobuf's layout) leaves the slot on reflection.
class SubmessageSlot {
 public:
  explicit SubmessageSlot(const FieldDescriptor* field) noexcept : field_(field) {}
  SubmessageSlot(const SubmessageSlot& other) noexcept
      : field_(other.field_),
        offset_(other.offset_.load(std::memory_order_acquire)),
        hasbit_offset_(other.hasbit_offset_.load(std::memory_order_relaxed)),
        hasbit_mask_(other.hasbit_mask_.load(std::memory_order_relaxed)) {}
  SubmessageSlot& operator=(const SubmessageSlot&) = delete;

  const FieldDescriptor* field() const noexcept { return field_; }
  // Whether reads go to the learned place (false: not learned yet, or reflection).
  bool direct() const noexcept { return offset_.load(std::memory_order_acquire) >= 0; }

  // The field's sub-message when HasField(m) (as reflection's MutableMessage, which then only
  // returns it), else nullptr.
  Message* Get(Message& m) const noexcept {
    std::ptrdiff_t offset = offset_.load(std::memory_order_acquire);
    if (offset == kUnknown) offset = Learn(m);
    if (offset < 0) return ByReflection(m);
    char* const base = reinterpret_cast<char*>(&m);
    const std::ptrdiff_t hasbit = hasbit_offset_.load(std::memory_order_relaxed);
    if (hasbit >= 0) {
      uint32_t word;
      std::memcpy(&word, base + hasbit, sizeof(word));
      if ((word & hasbit_mask_.load(std::memory_order_relaxed)) == 0) return nullptr;
    }
    Message* sub;
    std::memcpy(&sub, base + offset, sizeof(sub));
    assert(sub == ByReflection(m) && "a plan met two classes of one message type");
    return sub;
  }
  const Message* Get(const Message& m) const noexcept {  // never writes to `m`
    return Get(const_cast<Message&>(m));
  }

 private:
  static constexpr std::ptrdiff_t kUnknown = -1;
  static constexpr std::ptrdiff_t kReflection = -2;

  Message* ByReflection(Message& m) const noexcept {
    const Reflection& r = *m.GetReflection();
    return r.HasField(m, field_) ? r.MutableMessage(&m, field_) : nullptr;
  }

  struct Layout {
    std::ptrdiff_t offset = kReflection;
    std::ptrdiff_t hasbit_offset = -1;
    uint32_t hasbit_mask = 0;
  };

  std::ptrdiff_t Learn(Message& m) const noexcept {
    try {
      const Layout layout = Probe(m, field_);
      hasbit_offset_.store(layout.hasbit_offset, std::memory_order_relaxed);
      hasbit_mask_.store(layout.hasbit_mask, std::memory_order_relaxed);
      offset_.store(layout.offset, std::memory_order_release);
      return layout.offset;
    } catch (...) {  // out of memory: reflection this time, learn later
      return kReflection;
    }
  }

  // The pointer's and the has-bit's place, or offset kReflection.
  static Layout Probe(const Message& m, const FieldDescriptor* field) {
    // A oneof member's case word also changes when it is set, and can look like a has-bit.
    if (field->is_repeated() || field->real_containing_oneof() != nullptr ||
        field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
      return {};
    }
    // Generated classes only: a fresh one's SpaceUsedLong is exactly its object's size (nothing
    // hangs from it yet), so the snapshots stay inside the object. A DynamicMessage reports more
    // than it allocated.
    if (m.GetReflection()->GetMessageFactory() !=
        google::protobuf::MessageFactory::generated_factory()) {
      return {};
    }
    std::unique_ptr<Message> probe(m.New());  // heap, same class
    const Reflection& r = *probe->GetReflection();
    const size_t size = probe->SpaceUsedLong();
    if (size < sizeof(void*) || size > (1u << 16) || r.HasField(*probe, field)) return {};
    const auto* bytes = reinterpret_cast<const unsigned char*>(probe.get());
    const std::vector<unsigned char> fresh(bytes, bytes + size);
    const Message* sub = r.MutableMessage(probe.get(), field);
    const std::vector<unsigned char> set(bytes, bytes + size);
    r.ClearField(probe.get(), field);
    const std::vector<unsigned char> cleared(bytes, bytes + size);
    auto pointer_at = [](const std::vector<unsigned char>& v, size_t at) {
      const void* p;
      std::memcpy(&p, v.data() + at, sizeof(p));
      return p;
    };
    std::ptrdiff_t offset = kReflection;
    for (size_t at = 0; at + sizeof(void*) <= size; at += alignof(void*)) {
      if (pointer_at(set, at) != sub || pointer_at(fresh, at) != nullptr) continue;
      if (offset != kReflection) return {};  // twice: ambiguous
      offset = static_cast<std::ptrdiff_t>(at);
    }
    if (offset == kReflection) return {};
    Layout layout;
    layout.offset = offset;
    const auto in_pointer = [&](size_t at) {
      return at >= static_cast<size_t>(offset) && at < static_cast<size_t>(offset) + sizeof(void*);
    };
    // Outside the pointer, `fresh` and `cleared` are alike, and `set` differs in one bit at most.
    std::ptrdiff_t bit_at = -1;
    uint32_t mask = 0;
    for (size_t at = 0; at < size; ++at) {
      if (in_pointer(at)) continue;
      if (fresh[at] != cleared[at]) return {};
      const unsigned diff = static_cast<unsigned>(set[at] ^ fresh[at]);
      if (diff == 0) continue;
      if (bit_at >= 0 || (diff & (diff - 1)) != 0 || (set[at] & diff) == 0) return {};
      bit_at = static_cast<std::ptrdiff_t>(at);
      mask = diff;
    }
    if (bit_at < 0) {  // no has-bit: presence is the pointer, which ClearField reset
      if (pointer_at(cleared, static_cast<size_t>(offset)) != nullptr) return {};
      layout.hasbit_offset = -1;
    } else {  // a has-bit: ClearField kept the object and cleared the bit
      if (pointer_at(cleared, static_cast<size_t>(offset)) != sub) return {};
      const size_t word = static_cast<size_t>(bit_at) & ~size_t{3};
      if (word + sizeof(uint32_t) > size || in_pointer(word)) return {};
      uint32_t word_mask = 0;
      std::memcpy(reinterpret_cast<unsigned char*>(&word_mask) + (bit_at - word), &mask, 1);
      layout.hasbit_offset = static_cast<std::ptrdiff_t>(word);
      layout.hasbit_mask = word_mask;
    }
    return layout;
  }

  const FieldDescriptor* field_;
  mutable std::atomic<std::ptrdiff_t> offset_{kUnknown};
  // Stored before offset_ is published (release), read after it is seen (acquire); a thread that
  // learns concurrently stores the same values.
  mutable std::atomic<std::ptrdiff_t> hasbit_offset_{-1};
  mutable std::atomic<uint32_t> hasbit_mask_{0};
};

// Moves the cleared elements of a repeated field beyond `wanted` to the spares, or fills it up to
// `wanted` cleared elements from them (as far as they go).
inline void FitStrings(RepeatedPtrField<std::string>& field, int wanted,
                       SpareElements& spares) noexcept {
  int have = cleared_tail::ClearedCount(field);
  for (; have > wanted; --have) {
    try {
      spares.PutString(cleared_tail::TakeLastCleared(field));
    } catch (...) {  // PutString freed it (or left it to its arena)
    }
  }
  if (have >= wanted) return;
  // As many as the spares have; the merge allocates the rest.
  SpareQueue<std::string>& queue = spares.strings();
  const std::span<std::string* const> taken = queue.Front(static_cast<size_t>(wanted - have));
  // Spare strings have been cold since the last call, and the parse or copy that fills them comes
  // right after the message is fitted: start loading them now, many misses at once.
  for (std::string* s : taken) __builtin_prefetch(s, 1, 3);
  try {
    cleared_tail::Append(field, taken);
  } catch (...) {  // nothing moved: the merge allocates what is missing
    return;
  }
  queue.Drop(taken.size());
}

// Moves every cleared element of the field to the spares.
inline void ReleaseCleared(RepeatedPtrField<Message>& field, size_t type,
                           SpareElements& spares) noexcept {
  while (field.ClearedCount() > 0) {
    try {
      spares.PutMessage(type, cleared_tail::TakeLastCleared(field));
    } catch (...) {  // PutMessage freed it (or left it to its arena)
    }
  }
}

// Makes the field's next element live: a cleared one, a spare of type `type`, or a new one.
// Throws std::bad_alloc.
inline Message* NextElement(Message& m, const FieldSlot& slot, size_t type, SpareElements& spares) {
  RepeatedPtrField<Message>& field = slot.Of<Message>(m);
  if (field.ClearedCount() > 0) return field.Add();  // never allocates with a cleared element
  if (Message* spare = spares.TakeMessage(type)) {
    try {
      cleared_tail::Append(field, std::span<Message* const>(&spare, 1));
    } catch (...) {
      if (spare->GetArena() == nullptr) delete spare;
      throw;
    }
    return field.Add();
  }
  return m.GetReflection()->AddMessage(&m, slot.field());  // a new one, as the merge would make it
}

// What Gather needs to know of one tracked field of a fitter's plan node.
template <class Node>
struct GatherView {
  const FieldSlot* slot;
  FieldKind kind;
  const Node* element;  // kMessages, kSingular: the element type's node
  size_t spare_type;    // kMessages: SpareTypeId of the element type
  const SubmessageSlot* singular;  // kSingular
};

// A fitter takes spare messages of one type in queue order and fills each at once; they have been
// cold since the last call. SpareQueue::Take() starts loading the message objects a few takes
// ahead; this, called after each take, starts loading the field arrays (which filling writes
// first) of the spare that is a few takes ahead but fewer, whose object has arrived by then.
inline constexpr size_t kArrayLookahead = 4;
template <class Node, class View>
void PrefetchSpareArrays(const SpareElements& spares, size_t type, const Node& node,
                         const View& view) noexcept {
  Message* ahead = spares.PeekMessage(type, kArrayLookahead);
  if (ahead == nullptr) return;
  for (const auto& tracked : node.fields) {
    const auto f = view(tracked);
    if (f.kind == FieldKind::kStrings) {
      cleared_tail::PrefetchArray(f.slot->template Of<std::string>(*ahead));
    } else if (f.kind == FieldKind::kMessages) {
      cleared_tail::PrefetchArray(f.slot->template Of<Message>(*ahead));
    }
  }
}

namespace detail {
template <class Node, class View>
void GatherNode(Message& m, const Node& node, const View& view, SpareElements& spares, int depth,
                int max_depth) {
  // Fitters fill a message's sub-messages first (in field order), then its strings: gather alike.
  for (const auto& tracked : node.fields) {
    const GatherView<Node> f = view(tracked);
    if (f.kind == FieldKind::kSingular) {
      if (depth >= max_depth) continue;
      if (Message* sub = f.singular->Get(m)) {
        GatherNode(*sub, *f.element, view, spares, depth + 1, max_depth);
      }
      continue;
    }
    if (f.kind != FieldKind::kMessages) continue;
    RepeatedPtrField<Message>& elements = f.slot->template Of<Message>(m);
    const int n = cleared_tail::ClearedCount(elements);
    if (elements.size() != 0 || n == 0) continue;  // content is left alone
    SpareQueue<Message>& queue = spares.messages(f.spare_type);
    const size_t first = queue.Extend(static_cast<size_t>(n));
    cleared_tail::TakeAll(elements, queue.slots(first, static_cast<size_t>(n)));
    if (depth >= max_depth) continue;
    // By index, fetching the queue again: gathering an element may grow this queue (recursive
    // types) or the list of queues (a type seen for the first time).
    for (int i = 0; i < n; ++i) {
      Message* element = spares.messages(f.spare_type).slot(first + i);
      GatherNode(*element, *f.element, view, spares, depth + 1, max_depth);
    }
  }
  for (const auto& tracked : node.fields) {
    const GatherView<Node> f = view(tracked);
    if (f.kind != FieldKind::kStrings) continue;
    RepeatedPtrField<std::string>& strings = f.slot->template Of<std::string>(m);
    const int n = cleared_tail::ClearedCount(strings);
    if (n == 0) continue;
    SpareQueue<std::string>& queue = spares.strings();
    const size_t first = queue.Extend(static_cast<size_t>(n));
    cleared_tail::TakeAll(strings, queue.slots(first, static_cast<size_t>(n)));
  }
}
}  // namespace detail

// Starts loading the tree's skeleton (its messages and their fields' pointer arrays, not the
// strings) level by level. Gathering walks the tree depth first, and each step needs the
// previous one's load (message, then its field's array, then the elements): on a tree gone cold
// since the last call that is one cache miss after another, a tenth of a reused gRPC echo call.
// Here each level is one flat loop of independent loads, which the core overlaps.
template <class Node, class View>
void PrefetchSkeleton(Message& root, const Node& root_node, const View& view,
                      int max_depth) noexcept {
  struct Visit {
    Message* message;
    const Node* node;
  };
  thread_local std::vector<Visit> level, next;
  try {
    level.assign(1, {&root, &root_node});
    for (int depth = 0; depth < max_depth && !level.empty(); ++depth) {
      next.clear();
      for (const Visit& v : level) {  // the fields' arrays, whose addresses the messages hold
        for (const auto& tracked : v.node->fields) {
          const GatherView<Node> f = view(tracked);
          if (f.kind == FieldKind::kSingular) continue;
          const std::span<void* const> all =
              f.kind == FieldKind::kMessages
                  ? cleared_tail::AllElements(f.slot->template Of<Message>(*v.message))
                  : cleared_tail::AllElements(f.slot->template Of<std::string>(*v.message));
          for (size_t i = 0; i < all.size(); i += 8) __builtin_prefetch(all.data() + i, 0, 3);
        }
      }
      for (const Visit& v : level) {  // the next level's messages
        for (const auto& tracked : v.node->fields) {
          const GatherView<Node> f = view(tracked);
          if (f.kind == FieldKind::kSingular) {
            if (Message* sub = f.singular->Get(*v.message)) next.push_back({sub, f.element});
            continue;
          }
          if (f.kind != FieldKind::kMessages) continue;
          for (void* element :
               cleared_tail::AllElements(f.slot->template Of<Message>(*v.message))) {
            __builtin_prefetch(element, 1, 3);
            next.push_back({static_cast<Message*>(element), f.element});
          }
        }
      }
      level.swap(next);
    }
  } catch (...) {  // a hint only
  }
  level.clear();
  next.clear();
}

// Moves every cleared element of `m`'s tracked fields (`root`'s tree of fields, `view` describing
// each) into `spares`, ahead of the spares that were unused, in the order in which a fitter that
// walks the same tree takes them back (see spare_elements.h for why). Best effort: out of memory,
// it stops with the rest left in place. Never throws. `cold`: the tree has not been walked since
// its last call (prefetch its skeleton first); false right after a walk, when it is in cache.
template <class Node, class View>
void Gather(Message& m, const Node& root, const View& view, SpareElements& spares, int max_depth,
            bool cold = true) noexcept {
  if (cold) PrefetchSkeleton(m, root, view, max_depth);
  spares.BeginGather();
  try {
    detail::GatherNode(m, root, view, spares, 0, max_depth);
  } catch (...) {  // bad_alloc growing a queue: the elements not yet moved stay where they were
  }
  spares.EndGather();
}

}  // namespace arenarpc::memory::moves
