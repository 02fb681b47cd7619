#pragma once
// An error reply (spec §5.4) from this server on one connection, with brpc's error text:
// "[<server ip:port>][E<code>]<message>" (code -1: no "[E…]", sent as EINTERNAL).

#include <cstdint>
#include <string_view>

#include "arenarpc/buffer_chain.h"
#include "net/connection.h"

namespace arenarpc::server {

void WriteErrorReply(net::Connection& connection, int64_t correlation_id, int handler_code,
                     std::string_view message);

}  // namespace arenarpc::server
