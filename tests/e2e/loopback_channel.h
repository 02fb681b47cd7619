#pragma once
// A Channel to a test server on 127.0.0.1:<port> over `protocol` (10 s timeout by default).

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "arenarpc/channel.h"

namespace arenarpc::e2e {

inline std::unique_ptr<Channel> LoopbackChannel(int port, const std::string& protocol,
                                                int64_t timeout_ms = 10000) {
  ChannelOptions options;
  options.protocol = protocol;
  options.timeout_ms = timeout_ms;
  auto channel = std::make_unique<Channel>();
  EXPECT_EQ(0, channel->Init("127.0.0.1:" + std::to_string(port), &options));
  return channel;
}

}  // namespace arenarpc::e2e
