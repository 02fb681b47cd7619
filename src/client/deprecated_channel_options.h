#pragma once
// ChannelOptions' deprecated spellings (arenarpc/deprecated_option.h), applied once where the
// options enter a channel (Channel::Init's CheckInit, PartitionChannel::Init); nothing else reads
// the old fields.

#include "arenarpc/channel.h"

namespace arenarpc::client {

void ApplyDeprecatedSpellings(ChannelOptions* options);

}  // namespace arenarpc::client
