#pragma once
// Connect's server-side rules, the same on the HTTP/1.1 and HTTP/2 paths (docs/http.md, "Browsers:
// grpc-web and Connect"): its JSON codec (application/json, application/connect+json) — a
// request's JSON to the wire form the method's memory strategy parses, a streaming call's
// messages both ways — and which methods its GET may call.

#include <string>
#include <string_view>

#include "arenarpc/buffer_chain.h"
#include "protocol/payload_bytes.h"

namespace google::protobuf {
class Message;
}
namespace arenarpc::memory {
class RequestMemoryGate;
}

namespace arenarpc::server {

struct MethodBinding;
struct MethodEntry;

// Connect's GET calls only methods without side effects (option idempotency_level =
// NO_SIDE_EFFECTS), as the protocol says; the refusal's text for the others (a 405).
bool HasNoSideEffects(const MethodEntry& entry);
std::string ConnectGetRefusal(std::string_view method_full_name);

// The request body `json` (already inflated) as a request of `prototype`'s type in wire form,
// into *bytes, within the method's request memory `gate` (a JSON body too large for it sets
// *too_large). An empty body is the empty message. false: *error_text says why.
bool OpenJsonRequest(const google::protobuf::Message& prototype, memory::RequestMemoryGate& gate,
                     const net::BufferChain& json, protocol::PayloadBytes* bytes,
                     std::string* error_text, bool* too_large);

// A streaming call's request message: JSON to wire form. A body that is not JSON of the request's
// type passes as it is (the strategy's parse fails and says so).
std::string StreamJsonToWire(const MethodBinding& binding, std::string json);
// A streaming call's response message: wire form to JSON. false: it does not parse or print.
bool StreamWireToJson(const MethodBinding& binding, const std::string& wire, std::string* json);

}  // namespace arenarpc::server
