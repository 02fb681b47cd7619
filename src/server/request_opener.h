#pragma once
// Opening an admitted call's request bytes for MessagePair::ParseRequest(): checked, inflated
// (never past max_body_size) and, for JSON, converted with the method's prototypes — from what
// the call's RequestPayload says alone, on the call's thread, whatever protocol decoded it.

#include <cstddef>
#include <string>

#include "protocol/payload_bytes.h"

namespace arenarpc::server {

class ServerCall;
struct RequestPayload;

// false: *error_text is the error to answer (EREQUEST; ServerCall::MarkRequestTooLarge() was
// called when a JSON body is over max_request_memory).
bool OpenRequest(ServerCall& call, const RequestPayload& payload, size_t max_body_size,
                 protocol::PayloadBytes* bytes, std::string* error_text);

// The EREQUEST text for request bytes the strategy could not parse (brpc's, spec §5.3).
std::string ParseFailureText(const ServerCall& call, const RequestPayload& payload);

}  // namespace arenarpc::server
