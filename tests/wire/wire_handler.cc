#include "wire_handler.h"

#include <algorithm>
#include <optional>
#include <random>
#include <string>

#include <google/protobuf/unknown_field_set.h>

namespace arenarpc::wire {

void Answer(const WireRequest& request, WireReply* reply) {
  const uint32_t actions = request.actions();
  // A handler may look at the reply before writing it: a fresh reply has nothing set.
  if ((actions & kBranchOnPresence) && reply->has_node()) {
    reply->mutable_extra()->mutable_leaf()->set_n(11);
  }
  if ((actions & kCopyNode) && request.has_node()) *reply->mutable_node() = request.node();
  if (actions & kSetThenClear) {
    reply->mutable_extra()->mutable_leaf()->set_n(7);
    reply->clear_extra();
  }
  if (actions & kCopyNodes) *reply->mutable_nodes() = request.nodes();
  if (actions & kTouchOptional) reply->mutable_opt_extra();
  if (actions & kSwitchOneof) {
    reply->mutable_node()->set_one_text("text");
    reply->mutable_node()->mutable_one_leaf()->set_n(3);
  }
  if ((actions & kClearLeaf) && reply->has_node()) reply->mutable_node()->clear_leaf();
  if (actions & kExtraChild) reply->mutable_extra()->mutable_child()->mutable_leaf()->set_n(5);
  if (actions & kTouchExtra) reply->mutable_extra();
  if (actions & kAssignEmpty) *reply->mutable_node() = Node();
}

namespace {

void FillLeaf(std::mt19937& rng, int size, Leaf* leaf) {
  leaf->set_n(static_cast<int32_t>(rng() % 100));
  if (rng() % 2) leaf->set_s(std::string(rng() % 20, 's'));
  for (int i = 0; i < size; ++i) leaf->add_values(std::string(rng() % 30, 'v'));
}

void FillNode(std::mt19937& rng, int size, int depth, Node* node) {
  if (rng() % 3 != 0) FillLeaf(rng, size, node->mutable_leaf());
  if (rng() % 3 == 0) FillLeaf(rng, size, node->mutable_opt_leaf());
  for (int i = 0; i < size; ++i) FillLeaf(rng, size / 2, node->add_leaves());
  switch (rng() % 3) {
    case 0: FillLeaf(rng, size, node->mutable_one_leaf()); break;
    case 1: node->set_one_text("one"); break;
    default: break;
  }
  if (rng() % 2) node->set_maybe(static_cast<int64_t>(rng() % 3));  // 0 too: presence matters
  if (rng() % 3 == 0) {
    const int entries = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < entries; ++i) {
      (*node->mutable_counts())["k" + std::to_string(rng() % 9)] = static_cast<int32_t>(rng() % 7);
    }
  }
  if (rng() % 4 == 0) {  // fields from a newer schema: kept and copied like known ones
    google::protobuf::UnknownFieldSet* unknown =
        node->GetReflection()->MutableUnknownFields(node);
    unknown->AddVarint(900, rng() % 1000);
    unknown->AddLengthDelimited(901, std::string(rng() % 9, 'u'));
    unknown->AddFixed32(902, static_cast<uint32_t>(rng()));
  }
  if (depth > 0 && rng() % 2) FillNode(rng, size / 2, depth - 1, node->mutable_child());
}

}  // namespace

std::vector<WireRequest> RequestSequence(int count) {
  std::mt19937 rng(20261124);
  std::vector<WireRequest> requests;
  for (int i = 0; i < count; ++i) {
    WireRequest request;
    const int size = i < count / 8 ? 12 : static_cast<int>(rng() % 6);  // big ones first
    if (rng() % 4 != 0) {
      FillNode(rng, size, 3, request.mutable_node());
    } else if (rng() % 2) {
      request.mutable_node();  // present, empty: a copy of it is present in the reply too
    }
    const int nodes = i < count / 8 ? 6 : static_cast<int>(rng() % 3);
    for (int n = 0; n < nodes; ++n) FillNode(rng, size / 2, 2, request.add_nodes());
    // Every action set at some point, mixed; every 5th request none (the plainest handler).
    request.set_actions(i % 5 == 4 ? 0u : static_cast<uint32_t>(rng() % (kAllActions + 1)));
    requests.push_back(std::move(request));
  }
  return requests;
}

namespace {

// A field's extent in serialized bytes, read by ScanField.
struct RawField {
  uint32_t number = 0;
  int wire_type = 0;
  size_t begin = 0, value = 0, end = 0;  // tag, value (after a length prefix), one past the end
};

std::optional<uint64_t> ReadVarint(std::string_view bytes, size_t* at) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64 && *at < bytes.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(bytes[(*at)++]);
    value |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80u) == 0) return value;
  }
  return std::nullopt;
}

std::optional<RawField> ScanField(std::string_view bytes, size_t at) {
  RawField field;
  field.begin = at;
  const std::optional<uint64_t> tag = ReadVarint(bytes, &at);
  if (!tag) return std::nullopt;
  field.number = static_cast<uint32_t>(*tag >> 3);
  field.wire_type = static_cast<int>(*tag & 7);
  field.value = at;
  switch (field.wire_type) {
    case 0:
      if (!ReadVarint(bytes, &at)) return std::nullopt;
      break;
    case 1: at += 8; break;
    case 5: at += 4; break;
    case 2: {
      const std::optional<uint64_t> length = ReadVarint(bytes, &at);
      if (!length || *length > bytes.size() - at) return std::nullopt;
      field.value = at;
      at += *length;
      break;
    }
    default: return std::nullopt;  // groups: not in these schemas
  }
  if (at > bytes.size()) return std::nullopt;
  field.end = at;
  return field;
}

// Walks `bytes` as a `type`; `on_map(entries)` sees each run of one map field's entries.
template <typename OnMap>
std::optional<std::string> Walk(std::string_view bytes, const google::protobuf::Descriptor& type,
                                OnMap& on_map) {
  std::string out;
  size_t at = 0;
  while (at < bytes.size()) {
    std::optional<RawField> field = ScanField(bytes, at);
    if (!field) return std::nullopt;
    const google::protobuf::FieldDescriptor* known = type.FindFieldByNumber(field->number);
    const bool message = known != nullptr && field->wire_type == 2 &&
                         known->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE;
    if (message && known->is_map()) {
      std::vector<std::string> entries;
      while (field && field->number == static_cast<uint32_t>(known->number())) {
        entries.emplace_back(bytes.substr(field->begin, field->end - field->begin));
        at = field->end;
        field = at < bytes.size() ? ScanField(bytes, at) : std::nullopt;
      }
      on_map(entries);
      for (const std::string& entry : entries) out += entry;
      continue;
    }
    if (message) {
      std::optional<std::string> inner =
          Walk(bytes.substr(field->value, field->end - field->value), *known->message_type(),
               on_map);
      if (!inner) return std::nullopt;
      out.append(bytes.substr(field->begin, field->value - field->begin));
      out += *inner;
    } else {
      out.append(bytes.substr(field->begin, field->end - field->begin));
    }
    at = field->end;
  }
  return out;
}

}  // namespace

std::string SortMapEntries(std::string_view bytes, const google::protobuf::Descriptor& type) {
  auto sort = [](std::vector<std::string>& entries) { std::sort(entries.begin(), entries.end()); };
  return Walk(bytes, type, sort).value_or(std::string());
}

int MultiEntryMaps(std::string_view bytes, const google::protobuf::Descriptor& type) {
  int count = 0;
  auto counter = [&count](std::vector<std::string>& entries) { count += entries.size() > 1; };
  Walk(bytes, type, counter);
  return count;
}

}  // namespace arenarpc::wire
