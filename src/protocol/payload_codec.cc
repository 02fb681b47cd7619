#include "protocol/payload_codec.h"

#include <google/protobuf/io/coded_stream.h>

#include <climits>

#include "protocol/checksum.h"

namespace arenarpc::protocol {

const char* ContentTypeName(int content_type) noexcept {
  switch (content_type) {
    case CONTENT_TYPE_PB:
      return "pb";
    case CONTENT_TYPE_JSON:
      return "json";
    case CONTENT_TYPE_PROTO_JSON:
      return "proto-json";
    case CONTENT_TYPE_PROTO_TEXT:
      return "proto-text";
    default:
      return "unknown";
  }
}

bool SerializePayload(const google::protobuf::Message& message, int compress_type,
                      net::BufferChain* out, std::string* error, std::string_view what) {
  if (!message.IsInitialized()) {
    *error = "Missing required fields in " + std::string(what) + ": " +
             message.InitializationErrorString();
    return false;
  }
  if (!IsSupportedCompressType(compress_type)) {
    *error = "Fail to compress " + std::string(what) +
             ": unsupported compress_type=" + std::to_string(compress_type);
    return false;
  }
  const size_t size = message.ByteSizeLong();  // one walk; the sizes stay cached for Serialize
  if (size > static_cast<size_t>(INT_MAX)) {
    *error = "Fail to serialize " + std::string(what) + ": " + std::to_string(size) +
             " bytes is more than protobuf allows";
    return false;
  }
  net::BufferChain serialized;
  {
    net::BufferChainOutputStream stream(&serialized);
    google::protobuf::io::CodedOutputStream coded(&stream);
    message.SerializeWithCachedSizes(&coded);
    if (coded.HadError()) {
      *error = "Fail to serialize " + std::string(what) + "=" + message.GetTypeName();
      return false;
    }
  }
  if (compress_type == COMPRESS_TYPE_NONE) {
    out->Append(std::move(serialized));
    return true;
  }
  std::string why;
  if (!Compress(compress_type, serialized, out, &why)) {
    *error = "Fail to compress " + std::string(what) + ": " + why;
    return false;
  }
  return true;
}

bool OpenPayload(const PayloadEncoding& encoding, const net::BufferChain& payload,
                 const net::BufferChain& attachment, PayloadBytes* bytes, std::string* detail,
                 size_t max_decompressed) {
  if (encoding.content_type != CONTENT_TYPE_PB) {
    *detail = std::string("content_type=") + ContentTypeName(encoding.content_type) +
              " is not supported (only pb)";
    return false;
  }
  if (!VerifyChecksum(encoding, payload, attachment, detail)) return false;
  if (encoding.compress_type == COMPRESS_TYPE_NONE) {
    bytes->Refer(payload);
  } else {
    net::BufferChain plain;
    if (!Decompress(encoding.compress_type, payload, &plain, detail, max_decompressed)) {
      return false;
    }
    bytes->Own(std::move(plain));
  }
  if (bytes->size() > static_cast<size_t>(INT_MAX)) {
    *detail = "payload larger than 2 GiB";
    return false;
  }
  return true;
}

std::string ParseFailureDetail(const google::protobuf::Message& message,
                               memory::ParseResult result) {
  if (result == memory::ParseResult::kMissingRequiredFields) {
    return "missing required fields: " + message.InitializationErrorString();
  }
  return "invalid protobuf bytes for " + message.GetTypeName();
}

bool MergePayload(const PayloadEncoding& encoding, const net::BufferChain& payload,
                  const net::BufferChain& attachment, google::protobuf::Message* message,
                  std::string* detail, size_t max_decompressed) {
  PayloadBytes bytes;
  if (!OpenPayload(encoding, payload, attachment, &bytes, detail, max_decompressed)) return false;
  const memory::ParseResult result = memory::MergeSerialized(*message, bytes);
  if (result == memory::ParseResult::kOk) return true;
  *detail = ParseFailureDetail(*message, result);
  return false;
}

std::string ParseFailureText(std::string_view what, const google::protobuf::Message& message,
                             const PayloadEncoding& encoding, size_t size) {
  std::string text = "Fail to parse ";
  text.append(what).append("=").append(message.GetDescriptor()->full_name());
  text.append(", ContentType=").append(ContentTypeName(encoding.content_type));
  text.append(", CompressType=").append(CompressTypeName(encoding.compress_type));
  text.append(", ChecksumType=").append(ChecksumTypeName(encoding.checksum_type));
  text.append(", ").append(what).append("_size=").append(std::to_string(size));
  return text;
}

}  // namespace arenarpc::protocol
