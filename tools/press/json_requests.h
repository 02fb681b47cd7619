#pragma once
// The --input file of arenarpc_press: requests as JSON objects, converted once, at startup, into
// the method's input type. Accepted layouts (as brpc's rpc_press accepts them):
//   JSON lines            one object per line (blank lines ignored)
//   one object            possibly spread over many lines
//   an array of objects   [ {...}, {...} ]
// Objects may also simply follow each other. Every problem is reported with its line number.

#include <google/protobuf/message.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace arenarpc::press {

struct JsonObjectText {
  int line = 0;           // 1-based line where the object starts
  std::string_view text;  // "{...}", a view into the input
};

// Finds the top-level objects of `input` (a tokenizer of strings and braces, not a JSON parser:
// the objects' contents are checked by protobuf's parser). Returns false with *error ("line N:
// ...") when something other than objects (or one array of objects) is found, or an object is
// not closed.
bool SplitJsonObjects(std::string_view input, std::vector<JsonObjectText>* objects,
                      std::string* error);

// Parses every object of `input` into a new message like `prototype` (unknown JSON fields are
// errors). False with *error ("line N: ...", or "no request" for an empty input) on failure.
bool ParseJsonRequests(std::string_view input, const google::protobuf::Message& prototype,
                       std::vector<std::unique_ptr<google::protobuf::Message>>* messages,
                       std::string* error);

// Reads `path` and parses it as above; errors start with "--input: <path>: ".
bool LoadJsonRequests(const std::string& path, const google::protobuf::Message& prototype,
                      std::vector<std::unique_ptr<google::protobuf::Message>>* messages,
                      std::string* error);

}  // namespace arenarpc::press
