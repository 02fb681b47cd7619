#include "memory/reuse/response_mirror.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "memory/reuse/element_moves.h"

namespace arenarpc::memory {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

namespace {
constexpr int kMaxMirrorDepth = 64;
}  // namespace

struct ResponseMirror::Pair {
  using Kind = moves::FieldKind;
  struct Field {
    const FieldDescriptor* response;
    const FieldDescriptor* request;
    Kind kind;
    const Pair* element = nullptr;  // kMessages, kSingular
    size_t spare_type = 0;          // kMessages
    moves::FieldSlot response_slot{response};
    moves::FieldSlot request_slot{request};
    moves::SubmessageSlot response_singular{response};  // kSingular
    moves::SubmessageSlot request_singular{request};
  };
  std::vector<Field> fields;
  bool has_repeated = false;  // here or below: whether fitting can move anything
};

namespace {

using Pair = ResponseMirror::Pair;
using Kind = Pair::Kind;

// A closure, not a function: the walks in element_moves.h take it by type and inline it.
constexpr auto GatherViewOf = [](const Pair::Field& f) -> moves::GatherView<Pair> {
  return {&f.response_slot, f.kind, f.element, f.spare_type, &f.response_singular};
};

void FitPair(Message& response, const Message& request, const Pair& pair, SpareElements& spares,
             int depth) {
  // Sub-messages first, then strings: the order in which Gather queued the spares.
  for (const Pair::Field& f : pair.fields) {
    if (f.kind == Kind::kMessages) {
      const auto& wanted = f.request_slot.Of<Message>(request);
      auto& field = f.response_slot.Of<Message>(response);
      if (field.size() != 0) continue;  // already written: leave the handler's content alone
      try {
        for (const Message& model : wanted) {
          Message* element = moves::NextElement(response, f.response_slot, f.spare_type, spares);
          moves::PrefetchSpareArrays(spares, f.spare_type, *f.element, GatherViewOf);
          if (depth < kMaxMirrorDepth && f.element->has_repeated) {
            FitPair(*element, model, *f.element, spares, depth + 1);
          }
        }
      } catch (...) {  // out of memory: fit what we have; the handler allocates the rest
      }
      moves::ReleaseCleared(field, f.spare_type, spares);
      field.Clear();  // the elements made live become cleared, in order
    } else if (f.kind == Kind::kSingular && depth < kMaxMirrorDepth) {
      Message* out = f.response_singular.Get(response);
      const Message* in = out != nullptr ? f.request_singular.Get(request) : nullptr;
      if (in != nullptr) FitPair(*out, *in, *f.element, spares, depth + 1);
    }
  }
  for (const Pair::Field& f : pair.fields) {
    if (f.kind == Kind::kStrings) {
      moves::FitStrings(f.response_slot.Of<std::string>(response),
                        f.request_slot.Of<std::string>(request).size(), spares);
    }
  }
}

}  // namespace

ResponseMirror::ResponseMirror(const Descriptor& request, const Descriptor& response,
                               bool through_singular)
    : through_singular_(through_singular) {
  root_ = PairFor(response, request);
  useful_ = root_->has_repeated;
}
ResponseMirror::~ResponseMirror() = default;

const ResponseMirror::Pair* ResponseMirror::PairFor(const Descriptor& response,
                                                    const Descriptor& request) {
  auto& slot = pairs_[{&response, &request}];
  if (slot) return slot.get();  // also ends recursion through recursive types
  slot = std::make_unique<Pair>();
  Pair& pair = *slot;
  for (int i = 0; i < response.field_count(); ++i) {
    const FieldDescriptor* out = response.field(i);
    const FieldDescriptor* in = request.FindFieldByNumber(out->number());
    if (in == nullptr || !moves::IsPlainField(*out) || !moves::IsPlainField(*in)) continue;
    if (out->is_repeated() != in->is_repeated()) continue;
    if (moves::IsRepeatedStringField(*out) && moves::IsRepeatedStringField(*in)) {
      pair.fields.push_back({out, in, Kind::kStrings});
      pair.has_repeated = true;
    } else if (out->type() == FieldDescriptor::TYPE_MESSAGE &&
               in->type() == FieldDescriptor::TYPE_MESSAGE) {
      const Pair* element = PairFor(*out->message_type(), *in->message_type());
      if (out->is_repeated()) {
        pair.fields.push_back(
            {out, in, Kind::kMessages, element, SpareTypeId(*out->message_type())});
        pair.has_repeated = true;
      } else if (through_singular_ && element->has_repeated) {
        pair.fields.push_back({out, in, Kind::kSingular, element});
        pair.has_repeated = true;
      }
    }
  }
  return &pair;
}

void ResponseMirror::Fit(Message& response, const Message& request,
                         SpareElements& spares) const noexcept {
  if (!useful_) return;
  spares.ScrubStrings();  // the response is the handler's to fill, not a parse's
  moves::Gather(response, *root_, GatherViewOf, spares, kMaxMirrorDepth);
  FitPair(response, request, *root_, spares, 0);
}

void ResponseMirror::GatherCleared(Message& response, SpareElements& spares) const noexcept {
  if (!useful_) return;
  moves::Gather(response, *root_, GatherViewOf, spares, kMaxMirrorDepth, /*cold=*/false);
}

}  // namespace arenarpc::memory
