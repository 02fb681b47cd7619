#pragma once
// ReplayTransport: sends --replay's records, each over its ReplayCall's protocol: baidu_std and
// gRPC through arenarpc::Channel (the record's method, attachment, compression and metadata),
// HTTP through the press's HTTP transport (the recorded request written as it is).

#include <cstdint>
#include <memory>
#include <span>

#include "press/transport.h"

namespace arenarpc::press {

class ReplaySet;
struct ReplayCall;
struct PressRequest;

// `set` must outlive the transport; only the protocols its records use are connected.
std::unique_ptr<Transport> MakeReplayTransport(const ReplaySet& set);

// --replay_check's first pass: sends every record once, at most `in_flight` at a time, and keeps
// each reply (ReplayCall::first_reply) as the one later replies must equal. A call that failed
// for the load's sake (IsLoadFailure: timed out, refused by an overloaded server, connection
// lost) says nothing of the handler: its record is sent again once, alone, and if that fails too
// it is left without a reference (not checked). A handler's error reply is a reference. Returns
// how many records were left without one. `calls[i]` is `requests[i]`'s record.
uint64_t RecordFirstReplies(Transport& transport,
                            std::span<const std::shared_ptr<const PressRequest>> requests,
                            std::span<ReplayCall> calls, int in_flight);
uint64_t RecordFirstReplies(Transport& transport, ReplaySet& set, int in_flight);

}  // namespace arenarpc::press
