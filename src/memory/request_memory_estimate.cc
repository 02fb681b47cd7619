#include "memory/request_memory_estimate.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/zero_copy_stream.h>
#include <google/protobuf/message.h>

#include <algorithm>
#include <string>
#include <vector>

#include "memory/reuse/wire_scanner.h"

namespace arenarpc::memory {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

namespace {

constexpr int kMaxParseDepth = 100;  // protobuf's default recursion limit: a parse fails past it
constexpr uint32_t kDenseNumbers = 256;    // field numbers below this are looked up in an array
constexpr uint64_t kPointerSlot = 2 * sizeof(void*);  // a repeated element's slot, array doubling
constexpr uint64_t kUnknownRecord = 32;    // UnknownField (16 bytes) in a doubling vector

// A glibc malloc chunk for `n` bytes: 8 bytes of header, 16-byte granules, 32 bytes at least.
constexpr uint64_t HeapCost(uint64_t n) { return std::max<uint64_t>(32, (n + 8 + 15) & ~15ull); }
constexpr uint64_t kStringObject = HeapCost(sizeof(std::string));
// A string's bytes beyond the small-string buffer.
constexpr uint64_t LongString(uint64_t length) { return length > 15 ? HeapCost(length + 1) : 0; }

uint64_t ObjectBytes(const Descriptor& d) {
  if (const google::protobuf::Message* prototype =
          google::protobuf::MessageFactory::generated_factory()->GetPrototype(&d)) {
    return HeapCost(prototype->SpaceUsedLong());
  }
  return HeapCost(16 + 8 * static_cast<uint64_t>(d.field_count()));  // not generated: about so
}

uint64_t ScalarBytes(const FieldDescriptor& f) {
  switch (f.cpp_type()) {
    case FieldDescriptor::CPPTYPE_BOOL:
      return 1;
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT64:
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return 8;
    default:
      return 4;
  }
}

bool IsVarint(const FieldDescriptor& f) {
  switch (f.type()) {
    case FieldDescriptor::TYPE_FIXED32:
    case FieldDescriptor::TYPE_FIXED64:
    case FieldDescriptor::TYPE_SFIXED32:
    case FieldDescriptor::TYPE_SFIXED64:
    case FieldDescriptor::TYPE_FLOAT:
    case FieldDescriptor::TYPE_DOUBLE:
      return false;
    default:
      return true;
  }
}

uint32_t ScalarWireType(const FieldDescriptor& f) {
  if (IsVarint(f)) return 0;
  return ScalarBytes(f) == 8 ? 1 : 5;
}

}  // namespace

struct RequestMemoryEstimator::Type {
  enum class Kind : uint8_t { kScalar, kString, kMessage, kGroup };
  struct Field {
    uint32_t number;
    Kind kind;
    uint32_t wire_type;      // kScalar: its unpacked wire type
    uint64_t element_cost;   // per occurrence (kScalar: 0 when singular)
    uint64_t packed_per_byte;  // kScalar, repeated: per byte of a packed run
    const Type* sub;         // kMessage, kGroup
  };
  uint64_t object_cost = 0;
  std::vector<Field> fields;
  std::vector<int16_t> dense;

  const Field* Find(uint32_t number) const noexcept {
    if (number < dense.size()) return dense[number] < 0 ? nullptr : &fields[dense[number]];
    if (number < kDenseNumbers) return nullptr;
    for (const Field& f : fields) {
      if (f.number == number) return &f;
    }
    return nullptr;
  }
};

namespace {

using Type = RequestMemoryEstimator::Type;
using TypeKind = Type::Kind;

struct Scan {
  WireScanner& in;
  uint64_t total;
  uint64_t stop_above;
};

// Adds what the fields up to `end` (or up to `end_group`, a group's end tag) hold. `type` nullptr:
// the fields of an unknown group (all unknown). false: malformed, too deep, or over stop_above.
bool ScanFields(Scan& s, int64_t end, uint32_t end_group, const Type* type, int depth) noexcept {
  WireScanner& in = s.in;
  for (;;) {
    if (end_group == 0 && (end == WireScanner::kNoLimit ? in.AtEnd() : in.position() >= end)) {
      return true;
    }
    uint32_t tag;
    if (!in.ReadVarint32(&tag) || tag == 0) return false;
    if (end_group != 0 && tag == end_group) return true;
    const uint32_t wire_type = tag & 7;
    const Type::Field* f = type != nullptr ? type->Find(tag >> 3) : nullptr;
    if (f != nullptr && wire_type == 2 && f->kind != TypeKind::kGroup) {
      uint32_t length;
      if (!in.ReadVarint32(&length)) return false;
      if (f->kind == TypeKind::kMessage) {
        s.total += f->element_cost;
        if (depth >= kMaxParseDepth) return false;
        const int64_t sub_end = in.position() + length;
        if (end != WireScanner::kNoLimit && sub_end > end) return false;
        if (!ScanFields(s, sub_end, 0, f->sub, depth + 1) || in.position() != sub_end) return false;
      } else {
        if (!in.Skip(length)) return false;  // bytes a truncated request lacks cost nothing
        s.total += f->kind == TypeKind::kString ? f->element_cost + LongString(length)
                                                 : length * f->packed_per_byte;
      }
    } else if (f != nullptr && wire_type == 3 && f->kind == TypeKind::kGroup) {
      s.total += f->element_cost;
      if (depth >= kMaxParseDepth || !ScanFields(s, end, (tag & ~7u) | 4, f->sub, depth + 1)) {
        return false;
      }
    } else if (f != nullptr && f->kind == TypeKind::kScalar && wire_type == f->wire_type) {
      s.total += f->element_cost;
      if (!in.SkipField(tag)) return false;
    } else {  // unknown, or a known number with another wire type: kept as an unknown field
      s.total += kUnknownRecord;
      if (wire_type == 2) {
        uint32_t length;
        if (!in.ReadVarint32(&length)) return false;
        if (!in.Skip(length)) return false;
        s.total += kStringObject + LongString(length);
      } else if (wire_type == 3) {
        s.total += kStringObject;  // the group's own UnknownFieldSet
        if (depth >= kMaxParseDepth || !ScanFields(s, end, (tag & ~7u) | 4, nullptr, depth + 1)) {
          return false;
        }
      } else if (!in.SkipField(tag)) {
        return false;
      }
    }
    if (s.total > s.stop_above) return false;
    if (end != WireScanner::kNoLimit && in.position() > end) return false;
  }
}

}  // namespace

RequestMemoryEstimator::RequestMemoryEstimator(const Descriptor& root) {
  root_ = &TypeFor(root);
  root_bytes_ = root_->object_cost;
  // UpperBound's slope: the costliest occurrence per byte it needs at least (a one-byte tag and,
  // where it has one, a one-byte length), an unknown empty string field being the floor.
  uint64_t worst = (kUnknownRecord + kStringObject + 1) / 2;
  for (const auto& [descriptor, type] : types_) {
    largest_object_ = std::max(largest_object_, type->object_cost);
    for (const Type::Field& f : type->fields) {
      worst = std::max(worst, f.packed_per_byte);
      worst = std::max(worst, (f.element_cost + 1) / 2);
    }
  }
  worst_per_byte_ = worst;
}

RequestMemoryEstimator::~RequestMemoryEstimator() = default;

const RequestMemoryEstimator::Type& RequestMemoryEstimator::TypeFor(const Descriptor& d) {
  auto& slot = types_[&d];
  if (slot) return *slot;  // also breaks cycles: the entry exists before its fields are planned
  slot = std::make_unique<Type>();
  Type& type = *slot;
  type.object_cost = ObjectBytes(d);
  for (int i = 0; i < d.field_count(); ++i) {
    const FieldDescriptor& f = *d.field(i);
    Type::Field field{static_cast<uint32_t>(f.number()), TypeKind::kScalar, 0, 0, 0, nullptr};
    const uint64_t slot_cost = f.is_repeated() ? kPointerSlot : 0;
    switch (f.cpp_type()) {
      case FieldDescriptor::CPPTYPE_MESSAGE:
        field.kind =
            f.type() == FieldDescriptor::TYPE_GROUP ? TypeKind::kGroup : TypeKind::kMessage;
        field.sub = &TypeFor(*f.message_type());
        // A map entry becomes a node of the map (key, value, links) besides the entry object.
        field.element_cost = field.sub->object_cost + slot_cost + (f.is_map() ? 48 : 0);
        break;
      case FieldDescriptor::CPPTYPE_STRING:
        field.kind = TypeKind::kString;
        field.element_cost = kStringObject + slot_cost;
        break;
      default:
        field.wire_type = ScalarWireType(f);
        if (f.is_repeated()) {
          // Doubling arrays: up to twice the elements' size. A packed varint is 1 byte at least.
          field.element_cost = 2 * ScalarBytes(f);
          field.packed_per_byte = IsVarint(f) ? 2 * ScalarBytes(f) : 2;
        }
        break;
    }
    type.fields.push_back(field);
  }
  uint32_t max_dense = 0;
  for (const Type::Field& f : type.fields) {
    if (f.number < kDenseNumbers) max_dense = std::max(max_dense, f.number + 1);
  }
  type.dense.assign(max_dense, -1);
  for (size_t i = 0; i < type.fields.size(); ++i) {
    if (type.fields[i].number < kDenseNumbers) {
      type.dense[type.fields[i].number] = static_cast<int16_t>(i);
    }
  }
  return type;
}

uint64_t RequestMemoryEstimator::UpperBound(uint64_t wire_size) const noexcept {
  return root_bytes_ + wire_size * worst_per_byte_;
}

uint64_t RequestMemoryEstimator::Estimate(google::protobuf::io::ZeroCopyInputStream& wire,
                                          uint64_t stop_above) const noexcept {
  WireScanner in(wire);
  Scan scan{in, root_bytes_, stop_above};
  ScanFields(scan, WireScanner::kNoLimit, 0, root_, 0);
  return scan.total;
}

uint64_t RequestMemoryEstimator::EstimateJson(std::string_view json) const noexcept {
  uint64_t objects = 0, elements = 0, strings = 0, string_bytes = 0;
  bool in_string = false;
  uint64_t length = 0;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
        ++length;
      } else if (c == '"') {
        in_string = false;
        string_bytes += LongString(length);
      } else {
        ++length;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        length = 0;
        ++strings;
        break;
      case '{':
        ++objects;
        break;
      case '[':
      case ',':
        ++elements;
        break;
      default:
        break;
    }
  }
  if (in_string) string_bytes += LongString(length);
  return root_bytes_ + objects * (largest_object_ + kPointerSlot) +
         strings * (kStringObject + kPointerSlot) + string_bytes + elements * 16 + json.size();
}

}  // namespace arenarpc::memory
