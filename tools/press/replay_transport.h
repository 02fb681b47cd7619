#pragma once
// ReplayTransport: sends --replay's records, each over its ReplayCall's protocol: baidu_std and
// gRPC through arenarpc::Channel (the record's method, attachment, compression and metadata),
// HTTP through the press's HTTP transport (the recorded request written as it is).

#include <cstdint>
#include <memory>

#include "press/transport.h"

namespace arenarpc::press {

class ReplaySet;

// `set` must outlive the transport; only the protocols its records use are connected.
std::unique_ptr<Transport> MakeReplayTransport(const ReplaySet& set);

// --replay_check's first pass: sends every record of `set` once, at most `in_flight` at a time,
// and keeps each reply (ReplayCall::first_reply). Returns how many calls failed.
uint64_t RecordFirstReplies(Transport& transport, ReplaySet& set, int in_flight);

}  // namespace arenarpc::press
