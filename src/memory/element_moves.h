#pragma once
// Moving cleared repeated-field elements between a message and its SpareElements: shared by
// ShapePlan (fitting a request to its wire bytes) and ResponseMirror (fitting a response to its
// request). Internal to the memory engine.

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/message.h>
#include <google/protobuf/repeated_ptr_field.h>

#include <string>

#include "arenarpc/memory/spare_elements.h"

namespace arenarpc::memory::moves {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::RepeatedPtrField;

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

// Reflection's direct RepeatedPtrField access is deprecated in favour of RepeatedFieldRef, which
// has no ClearedCount/AddCleared/ReleaseCleared; protobuf 3.21 still supports it for generated
// (and dynamic) messages, and the cleared-element calls are the whole point here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
inline RepeatedPtrField<Message>& Messages(const Reflection& r, Message& m,
                                           const FieldDescriptor* f) {
  return *r.MutableRepeatedPtrField<Message>(&m, f);
}
inline RepeatedPtrField<std::string>& Strings(const Reflection& r, Message& m,
                                              const FieldDescriptor* f) {
  return *r.MutableRepeatedPtrField<std::string>(&m, f);
}
#pragma GCC diagnostic pop

// Moves the cleared elements of a repeated field beyond `wanted` to the spares, or fills it up to
// `wanted` cleared elements from them (as far as they go).
inline void FitStrings(RepeatedPtrField<std::string>& field, int wanted,
                       SpareElements& spares) noexcept {
  int have = field.ClearedCount();
  for (; have > wanted; --have) {
    try {
      spares.PutString(field.ReleaseCleared());
    } catch (...) {  // PutString freed it
    }
  }
  for (; have < wanted; ++have) {
    std::string* s = spares.TakeString();
    if (s == nullptr) return;  // the merge allocates the rest
    try {
      field.AddCleared(s);
    } catch (...) {
      delete s;
      return;
    }
  }
}

// Moves every cleared element of the field to the spares.
inline void ReleaseCleared(RepeatedPtrField<Message>& field, size_t type,
                           SpareElements& spares) noexcept {
  while (field.ClearedCount() > 0) {
    try {
      spares.PutMessage(type, field.ReleaseCleared());
    } catch (...) {  // PutMessage freed it
    }
  }
}

// Makes the field's next element live: a cleared one, a spare of type `type`, or a new one.
// Throws std::bad_alloc.
inline Message* NextElement(Message& m, const Reflection& r, const FieldDescriptor* f, size_t type,
                            SpareElements& spares) {
  RepeatedPtrField<Message>& field = Messages(r, m, f);
  if (field.ClearedCount() > 0) return field.Add();  // never allocates with a cleared element
  if (Message* spare = spares.TakeMessage(type)) {
    try {
      field.AddCleared(spare);
    } catch (...) {
      delete spare;
      throw;
    }
    return field.Add();
  }
  return r.AddMessage(&m, f);  // a new element, as the merge would make it
}

}  // namespace arenarpc::memory::moves
