#include "builtin/connections_page.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "builtin/page_format.h"
#include "builtin/page_view.h"
#include "builtin/stream_fields.h"

namespace arenarpc::builtin {
namespace {

using ConnectionRow = stats::ConnectionInfo;

void ServeConnections(const stats::ServerView& view, const BuiltinRequest& request,
                      BuiltinReply* reply) {
  if (RejectUnlessGet(request, reply)) return;
  const std::vector<ConnectionRow> rows = view.Connections();
  if (WantsJson(request)) {
    JsonWriter json;
    json.BeginObject().Field("count", static_cast<uint64_t>(rows.size()));
    json.Key("connections").BeginArray();
    for (const ConnectionRow& row : rows) {
      json.BeginObject()
          .Field("id", row.id)
          .Field("remote", row.remote)
          .Field("local", row.local)
          .Field("protocol", row.protocol)
          .Field("age_seconds", row.age_seconds)
          .Field("bytes_written", row.bytes_written)
          .Field("unwritten_held_bytes", row.unwritten_held_bytes)
          .Field("streams_open", static_cast<uint64_t>(row.streams.size()));
      json.Key("streams").BeginArray();
      for (const stats::StreamInfo& stream : row.streams) {
        json.BeginObject()
            .Field("id", stream.id)
            .Field("kind", stats::StreamKindName(stream.kind))
            .Field("method", stream.method)
            .Field("age_seconds", stream.age_seconds);
        WriteStreamTrafficFields(json, stream.traffic, stream.buffered_in_bytes,
                                 stream.buffered_out_bytes);
        json.EndObject();
      }
      json.EndArray().EndObject();
    }
    json.EndArray().EndObject();
    reply->content_type = "application/json";
    reply->body = json.Take() + "\n";
    return;
  }
  std::string text;
  char line[512];
  std::snprintf(line, sizeof line, "%-8s %-40s %-40s %-10s %10s %14s %14s\n", "id", "remote",
                "local", "protocol", "age_s", "bytes_written", "unwritten_held");
  text += line;
  for (const ConnectionRow& row : rows) {
    std::snprintf(line, sizeof line, "%-8llu %-40s %-40s %-10s %10.1f %14llu %14llu\n",
                  static_cast<unsigned long long>(row.id), row.remote.c_str(), row.local.c_str(),
                  row.protocol.c_str(), row.age_seconds,
                  static_cast<unsigned long long>(row.bytes_written),
                  static_cast<unsigned long long>(row.unwritten_held_bytes));
    text += line;
    for (const stats::StreamInfo& stream : row.streams) {
      std::snprintf(line, sizeof line, "  %s stream %llu %s, age %.1f s: ",
                    std::string(stats::StreamKindName(stream.kind)).c_str(),
                    static_cast<unsigned long long>(stream.id), stream.method.c_str(),
                    stream.age_seconds);
      text += line;
      text += StreamTrafficText(stream.traffic, stream.buffered_in_bytes,
                                stream.buffered_out_bytes) +
              "\n";
    }
  }
  text += std::to_string(rows.size()) + " connection(s)\n";
  reply->body = std::move(text);
}

}  // namespace

void AddConnectionsPage(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view) {
  registry->Add("/connections", "open connections (?format=json)",
                BindView(view, ServeConnections));
}

}  // namespace arenarpc::builtin
