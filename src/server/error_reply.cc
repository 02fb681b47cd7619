#include "server/error_reply.h"

#include "protocol/frame_codec.h"
#include "protocol/meta_builder.h"

namespace arenarpc::server {

void WriteErrorReply(net::Connection& connection, int64_t correlation_id, int handler_code,
                     std::string_view message) {
  net::BufferChain frame;
  protocol::EncodeErrorResponse(
      correlation_id, protocol::WireErrorCode(handler_code),
      protocol::FormatErrorText(protocol::ServerIdentity(connection.local_side()), handler_code,
                                message),
      &frame);
  connection.Write(std::move(frame));
}

}  // namespace arenarpc::server
