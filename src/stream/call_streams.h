#pragma once
// CallStreams: a call's streaming state, kept on its Controller (ControllerAccess::streams()).
// Client: the stream StreamCreate() offered. Server: the offer the request carried (and the
// connection's StreamHost), and the stream StreamAccept() made of it.

#include <memory>
#include <string_view>

#include "arenarpc/stream.h"
#include "protocol/rpc_meta.pb.h"

namespace arenarpc::stream {
class StreamHost;
}

namespace arenarpc::internal {

struct CallStreams {
  StreamId request_stream = INVALID_STREAM_ID;   // client
  bool offered = false;                          // server: the request had stream_settings
  protocol::StreamSettings remote;               // server: the client's settings
  std::shared_ptr<stream::StreamHost> host;      // server: the call's connection
  std::string_view method;                       // server: its full name (lives as the call)
  StreamId response_stream = INVALID_STREAM_ID;  // server: accepted
};

}  // namespace arenarpc::internal
