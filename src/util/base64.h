#pragma once
// Base64 (RFC 4648, standard alphabet): gRPC's binary headers (unpadded) and grpc-web-text bodies,
// whose senders may base64-encode each chunk on its own (padding inside the text).

#include <string>
#include <string_view>

namespace arenarpc::util {

// `bytes` as base64; `pad`: with '=' up to a multiple of 4 characters.
std::string EncodeBase64(std::string_view bytes, bool pad);

// Decodes *text in place (the bytes never outgrow the text): quanta of 4 characters, each of
// which may end in padding — a concatenation of padded encodings decodes as their bytes. false
// (and *error_offset: where) for a character outside the alphabet, misplaced padding or a
// truncated last quantum.
bool DecodeBase64InPlace(std::string* text, size_t* error_offset);

}  // namespace arenarpc::util
