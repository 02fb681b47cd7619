#include "protocol/http/connect_wire.h"

#include <array>

#include "protocol/h2/grpc_wire.h"
#include "protocol/http/http_request.h"
#include "protocol/http/status_details.h"
#include "util/base64.h"
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

std::string ConnectErrorJson(int grpc_status, std::string_view message,
                             std::string_view status_details) {
  std::string out = "{\"code\":\"";
  out += ConnectCodeName(grpc_status);
  out += '"';
  if (!message.empty()) {
    out += ",\"message\":";
    util::AppendJsonString(&out, message);
  }
  std::vector<StatusDetail> details;
  if (!status_details.empty() && ParseStatusDetails(status_details, &details) &&
      !details.empty()) {
    out += ",\"details\":[";
    for (size_t i = 0; i < details.size(); ++i) {
      if (i > 0) out += ',';
      // Connect names the type without the Any's URL prefix ("type.googleapis.com/").
      const std::string_view url = details[i].type_url;
      out += "{\"type\":";
      util::AppendJsonString(&out, url.substr(url.rfind('/') + 1));
      out += ",\"value\":\"";
      out += util::EncodeBase64(details[i].value, /*pad=*/false);
      out += "\"}";
    }
    out += ']';
  }
  out += '}';
  return out;
}

bool IsConnectGetQuery(std::string_view query) {
  for (const auto& [name, value] : ParseQuery(query)) {
    if (name == "connect" || name == "encoding") return true;
  }
  return false;
}

bool ParseConnectGetQuery(std::string_view query, ConnectGetQuery* out, std::string* error) {
  bool has_encoding = false, base64 = false, has_message = false;
  for (auto& [name, value] : ParseQuery(query)) {
    if (name == "connect" && value != "v1") {
      *error = "connect=" + value + ": this server speaks Connect v1";
      return false;
    }
    if (name == "encoding") {
      if (value != "proto" && value != "json") {
        *error = "encoding=" + value + " is not served (proto, json)";
        return false;
      }
      has_encoding = true;
      out->json = value == "json";
    } else if (name == "compression") {
      out->compression = value == "identity" ? std::string() : value;
    } else if (name == "base64") {
      base64 = value == "1";
    } else if (name == "message") {
      has_message = true;
      out->message = std::move(value);
    }
  }
  if (!has_encoding) {
    *error = "a Connect GET names its message's encoding (encoding=proto or encoding=json)";
    return false;
  }
  if (!has_message) {
    *error = "a Connect GET carries its message in the query (message=...)";
    return false;
  }
  if (!base64) return true;
  // base64url or standard, padded or not (a '+' read as a space by the query's decoding too).
  std::string& text = out->message;
  for (char& c : text) {
    if (c == '-' || c == ' ') {
      c = '+';
    } else if (c == '_') {
      c = '/';
    }
  }
  while (text.size() % 4 != 0) text += '=';
  size_t bad_at = 0;
  if (!util::DecodeBase64InPlace(&text, &bad_at)) {
    *error = "message= is not base64 (at character " + std::to_string(bad_at) + ")";
    return false;
  }
  return true;
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
                                 const std::vector<std::pair<std::string, std::string>>& metadata,
                                 std::string_view status_details) {
  std::string out = "{";
  if (grpc_status != 0) {
    out += "\"error\":" + ConnectErrorJson(grpc_status, message, status_details);
  }
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
