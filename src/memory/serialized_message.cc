#include "arenarpc/memory/serialized_message.h"

#include <google/protobuf/message.h>

namespace arenarpc::memory {

ParseResult MergeSerialized(google::protobuf::Message& message, SerializedMessage& bytes) {
  if (!message.MergePartialFromBoundedZeroCopyStream(&bytes.Read(),
                                                     static_cast<int>(bytes.size()))) {
    return ParseResult::kInvalidBytes;
  }
  return message.IsInitialized() ? ParseResult::kOk : ParseResult::kMissingRequiredFields;
}

}  // namespace arenarpc::memory
