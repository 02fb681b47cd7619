#include "protocol/http/grpc_web_wire.h"

#include "protocol/h2/grpc_wire.h"

namespace arenarpc::protocol {

void AppendEnvelope(uint8_t flag, std::string_view payload, std::string* out) {
  char prefix[h2::kMessagePrefixSize];
  h2::EncodeMessagePrefix(false, static_cast<uint32_t>(payload.size()), prefix);
  prefix[0] = static_cast<char>(flag);
  out->append(prefix, sizeof(prefix));
  out->append(payload);
}

bool UnframeGrpcWebRequest(std::string_view body, std::string_view* message, bool* compressed,
                           std::string* error) {
  if (body.size() < h2::kMessagePrefixSize) {
    *error = "request body of " + std::to_string(body.size()) +
             " bytes holds no 5-byte message envelope";
    return false;
  }
  const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(body[i])); };
  const uint32_t flag = byte(0);
  if (flag > kGrpcWebCompressedFlag) {
    *error = "request envelope flag " + std::to_string(flag) +
             " (a request holds one message: flag 0, or 1 compressed)";
    return false;
  }
  const uint64_t length = (byte(1) << 24) | (byte(2) << 16) | (byte(3) << 8) | byte(4);
  const size_t rest = body.size() - h2::kMessagePrefixSize;
  if (length != rest) {
    *error = "request envelope says " + std::to_string(length) + " bytes, the body has " +
             std::to_string(rest) + " after it (a request carries exactly one message)";
    return false;
  }
  *compressed = flag == kGrpcWebCompressedFlag;
  *message = body.substr(h2::kMessagePrefixSize);
  return true;
}

void AppendGrpcWebMessage(std::string_view message, bool compressed, std::string* out) {
  AppendEnvelope(compressed ? kGrpcWebCompressedFlag : 0, message, out);
}

void AppendGrpcWebTrailers(int grpc_status, std::string_view message,
                           const std::vector<std::pair<std::string, std::string>>& extra,
                           std::string* out) {
  std::vector<std::pair<std::string, std::string>> fields = {
      {"grpc-status", std::to_string(grpc_status)}};
  if (!message.empty()) fields.emplace_back("grpc-message", h2::PercentEncode(message));
  fields.insert(fields.end(), extra.begin(), extra.end());
  AppendGrpcWebTrailerFields(fields, out);
}

void AppendGrpcWebTrailerFields(const std::vector<std::pair<std::string, std::string>>& fields,
                                std::string* out) {
  std::string lines;
  for (const auto& [name, value] : fields) lines += name + ":" + value + "\r\n";
  AppendEnvelope(kGrpcWebTrailersFlag, lines, out);
}

}  // namespace arenarpc::protocol
