#include "press/json_requests.h"

#include <google/protobuf/util/json_util.h>

#include <fstream>
#include <sstream>

namespace arenarpc::press {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

class Scanner {
 public:
  explicit Scanner(std::string_view input) : in_(input) {}

  bool Split(std::vector<JsonObjectText>* objects, std::string* error) {
    SkipSpace();
    const bool array = pos_ < in_.size() && in_[pos_] == '[';
    if (array) {
      ++pos_;
      SkipSpace();
      if (pos_ < in_.size() && in_[pos_] == ']') return Fail("the array holds no request", error);
    }
    while (true) {
      SkipSpace();
      if (pos_ == in_.size()) {
        return array ? Fail("the array is not closed with ']'", error) : true;
      }
      if (in_[pos_] != '{') {
        return Fail(std::string("expected a JSON object '{', found '") + in_[pos_] + "'", error);
      }
      const int start_line = line_;
      const size_t start = pos_;
      if (!SkipObject(error)) return false;
      objects->push_back({start_line, in_.substr(start, pos_ - start)});
      SkipSpace();
      if (!array) continue;
      if (pos_ == in_.size()) return Fail("the array is not closed with ']'", error);
      if (in_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (in_[pos_] == ']') {
        ++pos_;
        SkipSpace();
        if (pos_ != in_.size()) return Fail("text after the array's closing ']'", error);
        return true;
      }
      return Fail("expected ',' or ']' after an array element", error);
    }
  }

 private:
  void SkipSpace() {
    while (pos_ < in_.size() && IsSpace(in_[pos_])) Advance();
  }
  void Advance() {
    if (in_[pos_] == '\n') ++line_;
    ++pos_;
  }
  bool Fail(const std::string& what, std::string* error) {
    *error = "line " + std::to_string(line_) + ": " + what;
    return false;
  }
  // At '{': moves past its matching '}', skipping strings (and the braces inside them).
  bool SkipObject(std::string* error) {
    const int start_line = line_;
    int depth = 0;
    bool in_string = false;
    for (; pos_ < in_.size(); Advance()) {
      const char c = in_[pos_];
      if (in_string) {
        if (c == '\\' && pos_ + 1 < in_.size()) {
          ++pos_;  // an escaped character (never a newline in valid JSON)
        } else if (c == '"') {
          in_string = false;
        }
        continue;
      }
      if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) {
          Advance();
          return true;
        }
      }
    }
    *error = "line " + std::to_string(start_line) + ": the JSON object starting here is not closed";
    return false;
  }

  std::string_view in_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

bool SplitJsonObjects(std::string_view input, std::vector<JsonObjectText>* objects,
                      std::string* error) {
  return Scanner(input).Split(objects, error);
}

bool ParseJsonRequests(std::string_view input, const google::protobuf::Message& prototype,
                       std::vector<std::unique_ptr<google::protobuf::Message>>* messages,
                       std::string* error) {
  if (input.starts_with("\xEF\xBB\xBF")) input.remove_prefix(3);  // a UTF-8 byte order mark
  std::vector<JsonObjectText> objects;
  if (!SplitJsonObjects(input, &objects, error)) return false;
  if (objects.empty()) {
    *error = "no request (the input is empty)";
    return false;
  }
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;  // a misspelt field is an error, not a silent default
  for (const JsonObjectText& object : objects) {
    std::unique_ptr<google::protobuf::Message> message(prototype.New());
    const auto status = google::protobuf::util::JsonStringToMessage(
        google::protobuf::StringPiece(object.text.data(), object.text.size()), message.get(),
        options);
    if (!status.ok()) {
      *error = "line " + std::to_string(object.line) + ": not a " + prototype.GetTypeName() +
               ": " + std::string(status.message());
      return false;
    }
    if (!message->IsInitialized()) {
      *error = "line " + std::to_string(object.line) + ": " + prototype.GetTypeName() +
               " misses required fields: " + message->InitializationErrorString();
      return false;
    }
    messages->push_back(std::move(message));
  }
  return true;
}

bool LoadJsonRequests(const std::string& path, const google::protobuf::Message& prototype,
                      std::vector<std::unique_ptr<google::protobuf::Message>>* messages,
                      std::string* error) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    *error = "--input: cannot read '" + path + "'";
    return false;
  }
  std::ostringstream text;
  text << file.rdbuf();
  if (!ParseJsonRequests(text.str(), prototype, messages, error)) {
    *error = "--input: " + path + ": " + *error;
    return false;
  }
  return true;
}

}  // namespace arenarpc::press
