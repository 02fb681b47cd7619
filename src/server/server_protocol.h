#pragma once
// ServerProtocol: the part of a server connection that depends on its wire protocol — how requests
// are decoded and how replies and errors are packed (as brpc's Protocol: parse / process / pack,
// one object per connection instead of globals). Everything else on a call's path — admission,
// the backlog, limits, ServerCall, the memory strategy, stats — is ServerConnection's and
// ServerCall's, shared by every protocol.
//
// A connection's protocol is recognised from its first bytes (protocol/wire_protocol.h) and looked
// up in server_protocol_table.h.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "arenarpc/buffer_chain.h"
#include "net/connection.h"
#include "server/decoded_call.h"
#include "server/reply_sink.h"

namespace arenarpc::server {

struct ServerState;

// What a protocol tells the connection that owns it (ServerConnection).
class ProtocolOwner {
 public:
  // The replies the protocol held went below its bound (Saturated() is false again): decoding
  // and reading may resume.
  virtual void OnRepliesDrained(net::Connection& connection) = 0;

 protected:
  ~ProtocolOwner() = default;
};

// A protocol is also the ReplySink of the calls it decoded (reply_sink.h).
class ServerProtocol : public ReplySink {
 public:
  enum class Step {
    kNeedMore,           // no complete request in the input
    kCall,               // a method call (Decoded::call) waits for admission
    kTask,               // other work (Decoded::task: an HTTP page) waits for admission
    kAnswered,           // a request was answered or rejected without admission
    kMalformed,          // bad input: count it and close the connection now (error() says why)
    kMalformedAnswered,  // bad input, answered: count it; the protocol closes after the answer
    // The head of a large request (Decoded::call.head) is in, its body is not: the connection
    // admits it now — the next kCall is the same request — or refuses it and DropRequest()s it.
    kHead,
    // The protocol decoded its share of the input for this turn and more waits in it: other
    // connections go first, then Next() runs again on what is left (nothing new is read).
    kYield,
  };

  // Decodes the next request off `input`. A protocol decodes and packs; the connection admits.
  // After kCall decoded->call holds all of the call, after kTask decoded->task the work: the
  // connection hands it on once admitted (its parts move into the ServerCall or the backlog) or
  // drops it, answered through SendError(), when rejected — the protocol hears of neither.
  virtual Step Next(net::Connection& connection, net::BufferChain& input,
                    std::chrono::steady_clock::time_point read_at, Decoded* decoded) = 0;
  virtual const std::string& error() const noexcept = 0;  // after kMalformed*
  // After kHead, refused: drops the request's bytes from `input` (the request is its last bytes)
  // and returns how many of them are still to come; the connection discards those unread.
  virtual size_t DropRequest(net::BufferChain& /*input*/) { return 0; }
  // Bytes of the request at the front of `input` that are not in it yet (0: none or unknown):
  // the connection reads them, and little more, before it hands the input over again.
  virtual size_t MissingBytes(const net::BufferChain& /*input*/) const noexcept { return 0; }
  // Bytes of a request that has not completed were taken off the input (Next()'s thread).
  virtual bool InRequest() const noexcept { return false; }
  // The protocol holds as many replies waiting for their turn as it may (HTTP's in-order replies):
  // decoding and reading pause until ProtocolOwner::OnRepliesDrained(). Any thread; lock-free.
  virtual bool Saturated() const noexcept { return false; }
  // Unwritten output drained after the protocol asked (net::Connection::NotifyWhenDrained).
  virtual void OnOutputDrained(net::Connection& /*connection*/) {}
  // Memory held by replies waiting for their turn (not yet handed to the connection); counts in
  // max_unwritten_bytes with the connection's own unsent bytes. Any thread; lock-free.
  virtual size_t HeldBytes() const noexcept { return 0; }

  // The connection closed (any thread, once): what the protocol keeps per connection beyond its
  // calls (baidu_std's streams) is released.
  virtual void OnClosed() {}
  // Server::Stop() began: calls in flight finish, new ones get ELOGOFF (HTTP/2: GOAWAY).
  virtual void OnServerStopping(net::Connection& /*connection*/) {}
};

}  // namespace arenarpc::server
