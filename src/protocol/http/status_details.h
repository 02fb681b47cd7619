#pragma once
// A serialized google.rpc.Status (what grpc-status-details-bin carries) read for its details:
// each google.protobuf.Any's type URL and value bytes, without the google.rpc protos linked in.

#include <string>
#include <string_view>
#include <vector>

namespace arenarpc::protocol {

struct StatusDetail {
  std::string type_url;  // e.g. "type.googleapis.com/google.rpc.RetryInfo"
  std::string value;     // the detail message's bytes
};

// The details of `status` (google.rpc.Status: code = 1, message = 2, details = 3). false: the
// bytes are not such a message (*details is then empty).
bool ParseStatusDetails(std::string_view status, std::vector<StatusDetail>* details);

}  // namespace arenarpc::protocol
