#pragma once
// JSON string literals: the one escaping every JSON writer in arenarpc uses (HTTP bodies, the
// built-in pages, the press's reports). Escapes as protobuf's JSON printer does: quote, backslash,
// \b \f \n \r \t by name, other control bytes as \u00XX; everything else (UTF-8 included) as is.

#include <string>
#include <string_view>

namespace arenarpc::util {

// Appends `text` to *out as a quoted JSON string.
void AppendJsonString(std::string* out, std::string_view text);

// `text` escaped for a JSON string, without the quotes.
std::string JsonEscape(std::string_view text);

}  // namespace arenarpc::util
