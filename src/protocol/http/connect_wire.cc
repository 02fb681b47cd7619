#include "protocol/http/connect_wire.h"

#include <array>

#include "protocol/h2/grpc_wire.h"
#include "util/json_string.h"

namespace arenarpc::protocol {

namespace {

struct CodeRow {
  std::string_view name;
  int http_status;
};

// By gRPC status number, 0..16 (0, OK, is never an error).
constexpr std::array<CodeRow, 17> kCodes = {{
    {"ok", 200},
    {"canceled", 499},
    {"unknown", 500},
    {"invalid_argument", 400},
    {"deadline_exceeded", 504},
    {"not_found", 404},
    {"already_exists", 409},
    {"permission_denied", 403},
    {"resource_exhausted", 429},
    {"failed_precondition", 400},
    {"aborted", 409},
    {"out_of_range", 400},
    {"unimplemented", 501},
    {"internal", 500},
    {"unavailable", 503},
    {"data_loss", 500},
    {"unauthenticated", 401},
}};

const CodeRow& RowOf(int grpc_status) noexcept {
  return grpc_status > 0 && grpc_status < static_cast<int>(kCodes.size()) ? kCodes[grpc_status]
                                                                           : kCodes[2];
}

}  // namespace

std::string_view ConnectCodeName(int grpc_status) noexcept { return RowOf(grpc_status).name; }

int HttpStatusForConnectCode(int grpc_status) noexcept { return RowOf(grpc_status).http_status; }

std::string ConnectErrorJson(int grpc_status, std::string_view message) {
  std::string out = "{\"code\":\"";
  out += ConnectCodeName(grpc_status);
  out += '"';
  if (!message.empty()) {
    out += ",\"message\":";
    util::AppendJsonString(&out, message);
  }
  out += '}';
  return out;
}

bool IsWebTransportHeader(std::string_view name) noexcept {
  static constexpr std::string_view kNames[] = {
      "host", "connection", "keep-alive", "accept", "accept-encoding", "accept-language",
      "content-encoding", "origin", "referer", "x-grpc-web", "x-user-agent", "transfer-encoding",
      "expect", "cache-control", "pragma", "priority", "dnt"};
  for (std::string_view known : kNames) {
    if (name == known) return true;
  }
  return h2::IsReservedHeader(name) || name.substr(0, 8) == "connect-" ||
         name.substr(0, 4) == "sec-" || name.substr(0, 5) == "x-bd-";
}

std::string ConnectEndStreamJson(int grpc_status, std::string_view message,
                                 const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::string out = "{";
  if (grpc_status != 0) out += "\"error\":" + ConnectErrorJson(grpc_status, message);
  if (!metadata.empty()) {
    if (grpc_status != 0) out += ',';
    out += "\"metadata\":{";
    for (size_t i = 0; i < metadata.size(); ++i) {
      if (i > 0) out += ',';
      util::AppendJsonString(&out, metadata[i].first);
      out += ":[";
      util::AppendJsonString(&out, metadata[i].second);
      out += ']';
    }
    out += '}';
  }
  out += '}';
  return out;
}

}  // namespace arenarpc::protocol
