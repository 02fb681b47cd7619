#include "protocol/http/json_message.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>
#include <google/protobuf/stubs/strutil.h>
#include <google/protobuf/util/json_util.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "util/json_string.h"

namespace arenarpc::protocol {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

constexpr int kMaxDepth = 100;  // protobuf's own recursion limit

// Messages from google/protobuf/*.proto (Timestamp, Any, Struct, wrappers, ...) have special JSON
// forms: a type that reaches one is converted by protobuf's json_util instead.
bool ReachesWellKnownType(const Descriptor* type) {
  thread_local std::unordered_map<const Descriptor*, bool> cache;
  if (auto it = cache.find(type); it != cache.end()) return it->second;
  cache[type] = false;  // cycles: assume not while looking
  bool reaches = type->file()->package() == "google.protobuf";
  for (int i = 0; !reaches && i < type->field_count(); ++i) {
    const FieldDescriptor* field = type->field(i);
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      reaches = ReachesWellKnownType(field->message_type());
    }
  }
  cache[type] = reaches;
  return reaches;
}

// A plain message of `prototype`'s type kept per thread and type (cleared, not freed, between
// calls).
Message& Scratch(const Message& prototype) {
  thread_local std::unordered_map<const Descriptor*, std::unique_ptr<Message>> scratch;
  std::unique_ptr<Message>& message = scratch[prototype.GetDescriptor()];
  if (!message) message.reset(prototype.New());
  message->Clear();
  return *message;
}

// --- Message -> JSON (protobuf's JSON mapping, proto field names, defaults left out)

class JsonWriter {
 public:
  explicit JsonWriter(std::string* out) : out_(*out) {}

  void WriteMessage(const Message& message, size_t depth = 0) {
    const Reflection& reflection = *message.GetReflection();
    if (fields_.size() <= depth) fields_.resize(depth + 1);
    fields_[depth].clear();  // reused: no allocation per message
    reflection.ListFields(message, &fields_[depth]);
    out_ += '{';
    bool first = true;
    // By index: writing a sub-message may grow fields_ (and move its elements).
    for (size_t f = 0; f < fields_[depth].size(); ++f) {
      const FieldDescriptor* field = fields_[depth][f];
      if (!first) out_ += ',';
      first = false;
      WriteString(field->name());
      out_ += ':';
      if (field->is_map()) {
        WriteMap(message, reflection, field, depth);
      } else if (field->is_repeated()) {
        out_ += '[';
        const int size = reflection.FieldSize(message, field);
        for (int i = 0; i < size; ++i) {
          if (i > 0) out_ += ',';
          WriteValue(message, reflection, field, i, depth);
        }
        out_ += ']';
      } else {
        WriteValue(message, reflection, field, -1, depth);
      }
    }
    out_ += '}';
  }

 private:
  void WriteMap(const Message& message, const Reflection& reflection, const FieldDescriptor* field,
                size_t depth) {
    const FieldDescriptor* key = field->message_type()->map_key();
    const FieldDescriptor* value = field->message_type()->map_value();
    out_ += '{';
    const int size = reflection.FieldSize(message, field);
    for (int i = 0; i < size; ++i) {
      if (i > 0) out_ += ',';
      const Message& entry = reflection.GetRepeatedMessage(message, field, i);
      const Reflection& entry_reflection = *entry.GetReflection();
      const size_t key_at = out_.size();
      WriteValue(entry, entry_reflection, key, -1, depth);
      if (out_[key_at] != '"') {  // keys are strings in JSON
        out_.insert(key_at, 1, '"');
        out_ += '"';
      }
      out_ += ':';
      WriteValue(entry, entry_reflection, value, -1, depth);
    }
    out_ += '}';
  }

  // One value of `field` (element `index` of a repeated field, -1 for a singular one).
  void WriteValue(const Message& message, const Reflection& r, const FieldDescriptor* field,
                  int index, size_t depth) {
    const bool rep = index >= 0;
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        out_ += std::to_string(rep ? r.GetRepeatedInt32(message, field, index)
                                   : r.GetInt32(message, field));
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        out_ += std::to_string(rep ? r.GetRepeatedUInt32(message, field, index)
                                   : r.GetUInt32(message, field));
        break;
      case FieldDescriptor::CPPTYPE_INT64:  // 64-bit integers are strings in JSON
        out_ += '"';
        out_ += std::to_string(rep ? r.GetRepeatedInt64(message, field, index)
                                   : r.GetInt64(message, field));
        out_ += '"';
        break;
      case FieldDescriptor::CPPTYPE_UINT64:
        out_ += '"';
        out_ += std::to_string(rep ? r.GetRepeatedUInt64(message, field, index)
                                   : r.GetUInt64(message, field));
        out_ += '"';
        break;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        WriteDouble(rep ? r.GetRepeatedDouble(message, field, index) : r.GetDouble(message, field),
                    false);
        break;
      case FieldDescriptor::CPPTYPE_FLOAT:
        WriteDouble(rep ? r.GetRepeatedFloat(message, field, index) : r.GetFloat(message, field),
                    true);
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        out_ += (rep ? r.GetRepeatedBool(message, field, index) : r.GetBool(message, field))
                    ? "true"
                    : "false";
        break;
      case FieldDescriptor::CPPTYPE_ENUM: {
        const int number =
            rep ? r.GetRepeatedEnumValue(message, field, index) : r.GetEnumValue(message, field);
        const auto* value = field->enum_type()->FindValueByNumber(number);
        if (value != nullptr) {
          WriteString(value->name());
        } else {
          out_ += std::to_string(number);
        }
        break;
      }
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string scratch;
        const std::string& text =
            rep ? r.GetRepeatedStringReference(message, field, index, &scratch)
                : r.GetStringReference(message, field, &scratch);
        if (field->type() == FieldDescriptor::TYPE_BYTES) {
          out_ += '"';
          std::string encoded;
          google::protobuf::Base64Escape(text, &encoded);
          out_ += encoded;
          out_ += '"';
        } else {
          WriteString(text);
        }
        break;
      }
      case FieldDescriptor::CPPTYPE_MESSAGE: {
        const Message& sub =
            rep ? r.GetRepeatedMessage(message, field, index) : r.GetMessage(message, field);
        WriteMessage(sub, depth + 1);
        break;
      }
    }
  }

  void WriteDouble(double value, bool is_float) {
    if (std::isnan(value)) {
      out_ += "\"NaN\"";
    } else if (std::isinf(value)) {
      out_ += value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    } else {
      out_ += is_float ? google::protobuf::SimpleFtoa(static_cast<float>(value))
                       : google::protobuf::SimpleDtoa(value);
    }
  }

  void WriteString(std::string_view text) { util::AppendJsonString(&out_, text); }

  std::string& out_;
  std::vector<std::vector<const FieldDescriptor*>> fields_;  // by depth
};

// --- JSON -> Message (the same mapping; proto names or json names; null = not set)

class JsonReader {
 public:
  JsonReader(std::string_view text, std::string* error) : text_(text), error_(*error) {}

  bool ReadDocument(Message* message) {
    if (!ReadMessage(message, 0)) return false;
    SkipSpace();
    return pos_ == text_.size() || Fail("unexpected bytes after the JSON object");
  }

 private:
  bool Fail(std::string why) {
    error_ = why + " at offset " + std::to_string(pos_);
    return false;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r' || text_[pos_] == '\t')) {
      ++pos_;
    }
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Expect(char c) { return Consume(c) || Fail(std::string("expected '") + c + "'"); }
  bool ReadLiteral(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  bool ReadMessage(Message* message, int depth) {
    if (depth > kMaxDepth) return Fail("nesting deeper than " + std::to_string(kMaxDepth));
    if (!Expect('{')) return false;
    if (Consume('}')) return true;
    const Descriptor* type = message->GetDescriptor();
    do {
      std::string name;
      SkipSpace();
      if (!ReadString(&name)) return false;
      if (!Expect(':')) return false;
      const FieldDescriptor* field = FindField(type, name);
      if (field == nullptr) return Fail(type->full_name() + " has no field \"" + name + "\"");
      SkipSpace();
      if (ReadLiteral("null")) continue;  // the default: not set
      if (field->is_map()) {
        if (!ReadMap(message, field, depth)) return false;
      } else if (field->is_repeated()) {
        if (!Expect('[')) return false;
        if (Consume(']')) continue;
        do {
          SkipSpace();
          if (!ReadValue(message, field, true, depth)) return false;
        } while (Consume(','));
        if (!Expect(']')) return false;
      } else if (!ReadValue(message, field, false, depth)) {
        return false;
      }
    } while (Consume(','));
    return Expect('}');
  }

  static const FieldDescriptor* FindField(const Descriptor* type, const std::string& name) {
    if (const FieldDescriptor* field = type->FindFieldByName(name)) return field;
    for (int i = 0; i < type->field_count(); ++i) {
      if (type->field(i)->json_name() == name) return type->field(i);
    }
    return nullptr;
  }

  bool ReadMap(Message* message, const FieldDescriptor* field, int depth) {
    if (!Expect('{')) return false;
    if (Consume('}')) return true;
    const Reflection& reflection = *message->GetReflection();
    const FieldDescriptor* key_field = field->message_type()->map_key();
    const FieldDescriptor* value_field = field->message_type()->map_value();
    do {
      SkipSpace();
      std::string key;
      if (!ReadString(&key)) return false;
      if (!Expect(':')) return false;
      Message* entry = reflection.AddMessage(message, field);
      if (!SetScalarFromText(entry, key_field, key, false)) return false;
      SkipSpace();
      if (!ReadValue(entry, value_field, false, depth)) return false;
    } while (Consume(','));
    return Expect('}');
  }

  // One value for `field`, added (repeated) or set.
  bool ReadValue(Message* message, const FieldDescriptor* field, bool add, int depth) {
    const Reflection& r = *message->GetReflection();
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      Message* sub = add ? r.AddMessage(message, field) : r.MutableMessage(message, field);
      return ReadMessage(sub, depth + 1);
    }
    if (pos_ < text_.size() && text_[pos_] == '"') {
      std::string text;
      if (!ReadString(&text)) return false;
      return SetScalarFromText(message, field, text, add);
    }
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_BOOL) {
      bool value;
      if (ReadLiteral("true")) {
        value = true;
      } else if (ReadLiteral("false")) {
        value = false;
      } else {
        return Fail(field->full_name() + ": expected true or false");
      }
      add ? r.AddBool(message, field, value) : r.SetBool(message, field, value);
      return true;
    }
    const size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '-' ||
            text_[pos_] == '+' || text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
    }
    if (pos_ == start) return Fail(field->full_name() + ": expected a value");
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      return Fail(field->full_name() + ": expected a string");
    }
    return SetScalarFromText(message, field, std::string(text_.substr(start, pos_ - start)), add,
                             /*quoted=*/false);
  }

  // Numbers (JSON numbers or strings holding one), enums (name or number), strings and bytes
  // (base64) from their text.
  bool SetScalarFromText(Message* message, const FieldDescriptor* field, const std::string& text,
                         bool add, bool quoted = true) {
    const Reflection& r = *message->GetReflection();
    auto bad = [&] { return Fail(field->full_name() + ": invalid value \"" + text + "\""); };
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING:
        if (field->type() == FieldDescriptor::TYPE_BYTES) {
          std::string bytes;
          if (!google::protobuf::Base64Unescape(text, &bytes) &&
              !google::protobuf::WebSafeBase64Unescape(text, &bytes)) {
            return Fail(field->full_name() + ": invalid base64");
          }
          add ? r.AddString(message, field, std::move(bytes))
              : r.SetString(message, field, std::move(bytes));
        } else {
          add ? r.AddString(message, field, text) : r.SetString(message, field, text);
        }
        return true;
      case FieldDescriptor::CPPTYPE_ENUM: {
        const auto* value = field->enum_type()->FindValueByName(text);
        int number = 0;
        if (value != nullptr) {
          number = value->number();
        } else if (!ParseInteger(text, &number)) {
          return bad();
        }
        add ? r.AddEnumValue(message, field, number) : r.SetEnumValue(message, field, number);
        return true;
      }
      case FieldDescriptor::CPPTYPE_BOOL:
        if (text != "true" && text != "false") return bad();
        add ? r.AddBool(message, field, text == "true") : r.SetBool(message, field, text == "true");
        return true;
      case FieldDescriptor::CPPTYPE_INT32: {
        int32_t v;
        if (!ParseInteger(text, &v)) return bad();
        add ? r.AddInt32(message, field, v) : r.SetInt32(message, field, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_UINT32: {
        uint32_t v;
        if (!ParseInteger(text, &v)) return bad();
        add ? r.AddUInt32(message, field, v) : r.SetUInt32(message, field, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_INT64: {
        int64_t v;
        if (!ParseInteger(text, &v)) return bad();
        add ? r.AddInt64(message, field, v) : r.SetInt64(message, field, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_UINT64: {
        uint64_t v;
        if (!ParseInteger(text, &v)) return bad();
        add ? r.AddUInt64(message, field, v) : r.SetUInt64(message, field, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_DOUBLE:
      case FieldDescriptor::CPPTYPE_FLOAT: {
        double v;
        if (quoted && text == "NaN") {
          v = std::numeric_limits<double>::quiet_NaN();
        } else if (quoted && (text == "Infinity" || text == "-Infinity")) {
          v = text[0] == '-' ? -HUGE_VAL : HUGE_VAL;
        } else {
          char* end = nullptr;
          errno = 0;
          v = std::strtod(text.c_str(), &end);
          if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE) return bad();
        }
        if (field->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
          add ? r.AddFloat(message, field, static_cast<float>(v))
              : r.SetFloat(message, field, static_cast<float>(v));
        } else {
          add ? r.AddDouble(message, field, v) : r.SetDouble(message, field, v);
        }
        return true;
      }
      case FieldDescriptor::CPPTYPE_MESSAGE:
        return bad();
    }
    return bad();
  }

  // An integer written as digits, or as a number with a zero fraction/exponent ("1e3", "2.0").
  template <typename Int>
  static bool ParseInteger(const std::string& text, Int* out) {
    if (text.empty()) return false;
    errno = 0;
    char* end = nullptr;
    if constexpr (std::is_signed_v<Int>) {
      const long long v = std::strtoll(text.c_str(), &end, 10);
      if (errno == 0 && end == text.c_str() + text.size() && v >= std::numeric_limits<Int>::min() &&
          v <= std::numeric_limits<Int>::max()) {
        *out = static_cast<Int>(v);
        return true;
      }
    } else {
      if (text[0] != '-') {
        const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
        if (errno == 0 && end == text.c_str() + text.size() &&
            v <= std::numeric_limits<Int>::max()) {
          *out = static_cast<Int>(v);
          return true;
        }
      }
    }
    errno = 0;
    const double d = std::strtod(text.c_str(), &end);
    if (errno != 0 || end != text.c_str() + text.size() || std::floor(d) != d ||
        d < static_cast<double>(std::numeric_limits<Int>::min()) ||
        d >= static_cast<double>(std::numeric_limits<Int>::max())) {
      return false;
    }
    *out = static_cast<Int>(d);
    return true;
  }

  // A JSON string at pos_ (escapes decoded, \u surrogate pairs to UTF-8).
  bool ReadString(std::string* out) {
    if (pos_ >= text_.size() || text_[pos_] != '"') return Fail("expected a string");
    ++pos_;
    for (;;) {
      const size_t plain = text_.find_first_of("\"\\", pos_);
      if (plain == std::string_view::npos) return Fail("unterminated string");
      out->append(text_.substr(pos_, plain - pos_));
      pos_ = plain + 1;
      if (text_[plain] == '"') return true;
      if (pos_ >= text_.size()) return Fail("unterminated string");
      const char escape = text_[pos_++];
      switch (escape) {
        case '"':
        case '\\':
        case '/':
          out->push_back(escape);
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          uint32_t code;
          if (!ReadHex4(&code)) return false;
          if (code >= 0xd800 && code < 0xdc00) {
            uint32_t low;
            if (!ReadLiteral("\\u") || !ReadHex4(&low) || low < 0xdc00 || low > 0xdfff) {
              return Fail("invalid surrogate pair");
            }
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
          }
          AppendUtf8(code, out);
          break;
        }
        default:
          return Fail("invalid escape");
      }
    }
  }
  bool ReadHex4(uint32_t* code) {
    if (pos_ + 4 > text_.size()) return Fail("truncated \\u escape");
    *code = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      const int digit = c >= '0' && c <= '9'   ? c - '0'
                        : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                               : -1;
      if (digit < 0) return Fail("invalid \\u escape");
      *code = *code * 16 + static_cast<uint32_t>(digit);
    }
    return true;
  }
  static void AppendUtf8(uint32_t code, std::string* out) {
    if (code < 0x80) {
      out->push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out->push_back(static_cast<char>(0xc0 | (code >> 6)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3f)));
    } else if (code < 0x10000) {
      out->push_back(static_cast<char>(0xe0 | (code >> 12)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3f)));
    } else {
      out->push_back(static_cast<char>(0xf0 | (code >> 18)));
      out->push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3f)));
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string& error_;
};

bool JsonUtilToMessage(std::string_view json, Message* message, std::string* error) {
  google::protobuf::util::JsonParseOptions options;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::stringpiece_internal::StringPiece(json.data(), json.size()), message,
      options);
  if (status.ok()) return true;
  *error = std::string(status.message());
  return false;
}

}  // namespace

bool JsonToWire(const Message& prototype, std::string_view json, std::string* wire,
                std::string* error) {
  Message& message = Scratch(prototype);
  std::string why;
  const bool parsed = ReachesWellKnownType(message.GetDescriptor())
                          ? JsonUtilToMessage(json, &message, &why)
                          : JsonReader(json, &why).ReadDocument(&message);
  if (!parsed) {
    *error = "invalid JSON for " + message.GetTypeName() + ": " + why;
    return false;
  }
  if (!message.IsInitialized()) {
    *error = "JSON for " + message.GetTypeName() +
             " misses required fields: " + message.InitializationErrorString();
    return false;
  }
  if (!message.AppendToString(wire)) {
    *error = "cannot serialize " + message.GetTypeName();
    return false;
  }
  return true;
}

bool MessageToJson(const Message& message, std::string* json, std::string* error, bool via_wire) {
  if (!message.IsInitialized()) {
    *error = "missing required fields in " + message.GetTypeName() + ": " +
             message.InitializationErrorString();
    return false;
  }
  const Message* printed = &message;
  if (via_wire) {
    std::string wire;
    Message& copy = Scratch(message);
    if (!message.SerializeToString(&wire) || !copy.ParseFromString(wire)) {
      *error = "cannot serialize " + message.GetTypeName();
      return false;
    }
    printed = &copy;
  }
  if (!ReachesWellKnownType(printed->GetDescriptor())) {
    JsonWriter(json).WriteMessage(*printed);
    return true;
  }
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  const auto status = google::protobuf::util::MessageToJsonString(*printed, json, options);
  if (!status.ok()) {
    *error = "cannot print " + message.GetTypeName() + " as JSON: " + std::string(status.message());
    return false;
  }
  return true;
}

}  // namespace arenarpc::protocol
