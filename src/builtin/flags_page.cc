#include "builtin/flags_page.h"

#include <chrono>
#include <optional>
#include <string_view>
#include <vector>

#include "builtin/page_format.h"
#include "builtin/page_view.h"
#include "stats/server_settings.h"

namespace arenarpc::builtin {
namespace {

constexpr std::string_view kPrefix = "/flags/";

int64_t UnixMs(std::chrono::system_clock::time_point when) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count();
}

std::string Who(const SettingChange& change) {
  return change.principal.empty() ? change.peer : change.peer + " (" + change.principal + ")";
}

std::string Text(const std::vector<ServerSetting>& settings,
                 const std::vector<SettingChange>& changes) {
  // `name = value` lines in two groups, live ones first.
  std::string text;
  for (const bool live : {true, false}) {
    text += live ? "# live: change with /flags/NAME?setvalue=VALUE\n" : "# fixed at Start()\n";
    for (const ServerSetting& s : settings) {
      if (s.live == live) text += s.name + " = " + s.value + "\n";
    }
  }
  text += "# recent changes (" + std::to_string(changes.size()) + ", at most " +
          std::to_string(kSettingHistory) + ")\n";
  for (const SettingChange& c : changes) {
    text += UtcTime(UnixMs(c.when)) + " " + c.name + ": " + c.old_value + " -> " + c.new_value +
            " by " + Who(c) + "\n";
  }
  return text;
}

std::string Json(const std::vector<ServerSetting>& settings,
                 const std::vector<SettingChange>& changes) {
  JsonWriter json;
  json.BeginObject().Key("settings").BeginArray();
  for (const ServerSetting& s : settings) {
    json.BeginObject().Field("name", s.name).Field("value", s.value).Field("live", s.live);
    if (s.live) json.Field("help", s.help);
    json.EndObject();
  }
  json.EndArray().Key("changes").BeginArray();
  for (const SettingChange& c : changes) {
    json.BeginObject()
        .Field("unix_ms", UnixMs(c.when))
        .Field("peer", c.peer)
        .Field("principal", c.principal)
        .Field("name", c.name)
        .Field("old_value", c.old_value)
        .Field("new_value", c.new_value)
        .EndObject();
  }
  json.EndArray().EndObject();
  return json.Take() + "\n";
}

std::string Html(const std::vector<ServerSetting>& settings,
                 const std::vector<SettingChange>& changes, bool writable) {
  std::string html = HtmlHead("arenarpc flags") + "<h1>Settings</h1>\n";
  html += writable ? "<p class=\"note\">Live settings change at once: "
                     "<code>/flags/NAME?setvalue=VALUE</code>.</p>\n"
                   : "<p class=\"note\">This server does not change settings from its pages "
                     "(settings_from_pages=false).</p>\n";
  html += "<table>\n<tr><th>name</th><th>value</th><th>live</th><th></th></tr>\n";
  for (const ServerSetting& s : settings) {
    const std::string name = HtmlEscape(s.name);
    html += "<tr><td><code>" + name + "</code></td><td><code>" + HtmlEscape(s.value) +
            "</code></td><td>" + (s.live ? "yes" : "no") + "</td><td>";
    if (s.live && writable) {
      html += "<form action=\"/flags/" + name + "\"><input name=\"setvalue\" value=\"" +
              HtmlEscape(s.value) +
              "\"> <input type=\"submit\" value=\"set\"> <span class=\"note\">" +
              HtmlEscape(s.help) + "</span></form>";
    } else if (s.live) {
      html += "<span class=\"note\">" + HtmlEscape(s.help) + "</span>";
    }
    html += "</td></tr>\n";
  }
  html += "</table>\n<h2>Recent changes</h2>\n";
  if (changes.empty()) {
    html += "<p>none since the server started</p>\n";
  } else {
    html += "<table>\n<tr><th>when</th><th>who</th><th>setting</th><th>old</th><th>new</th></tr>\n";
    for (const SettingChange& c : changes) {
      html += "<tr><td>" + UtcTime(UnixMs(c.when)) + "</td><td>" + HtmlEscape(Who(c)) +
              "</td><td><code>" + HtmlEscape(c.name) + "</code></td><td><code>" +
              HtmlEscape(c.old_value) + "</code></td><td><code>" + HtmlEscape(c.new_value) +
              "</code></td></tr>\n";
    }
    html += "</table>\n";
  }
  html += "<p class=\"note\">JSON: <code>/flags?format=json</code></p>\n</body></html>\n";
  return html;
}

int StatusOf(stats::SetVerdict verdict) {
  switch (verdict) {
    case stats::SetVerdict::kChanged:
      return 200;
    case stats::SetVerdict::kUnknown:
      return 404;
    case stats::SetVerdict::kNotLive:
      return 403;
    case stats::SetVerdict::kInvalid:
      return 400;
    case stats::SetVerdict::kGone:
      return 503;
  }
  return 500;
}

void SetValue(const stats::ServerView& view, stats::ServerSettings& settings,
              const BuiltinRequest& request, const std::string& name, const std::string& value,
              BuiltinReply* reply) {
  if (request.method != "GET" && request.method != "POST" && !request.method.empty()) {
    reply->status = 405;
    reply->headers.emplace_back("Allow", "GET, POST");
    reply->body = "setvalue takes GET or POST\n";
    return;
  }
  if (!view.Options().settings_from_pages) {
    reply->status = 403;
    reply->body = "this server does not change settings from its pages "
                  "(ServerOptions::settings_from_pages=false): " + name + " is unchanged\n";
    return;
  }
  std::string error;
  const stats::SettingOrigin who{request.peer.empty() ? "-" : request.peer, request.principal};
  const stats::SetVerdict verdict = settings.Set(name, value, who, &error);
  reply->status = StatusOf(verdict);
  if (verdict != stats::SetVerdict::kChanged) {
    reply->body = error + "\n";
    return;
  }
  const std::vector<SettingChange> changes = settings.Changes();
  reply->body = changes.empty() ? name + " changed\n"
                                : name + ": " + changes.back().old_value + " -> " +
                                      changes.back().new_value + "\n";
}

void ServeFlags(const stats::ServerView& view, stats::ServerSettings& settings,
                const BuiltinRequest& request, BuiltinReply* reply) {
  std::string name;
  if (request.path.size() > kPrefix.size() && request.path.starts_with(kPrefix)) {
    name = request.path.substr(kPrefix.size());
  } else if (auto it = request.query.find("name"); it != request.query.end()) {
    name = it->second;
  }
  if (auto it = request.query.find("setvalue"); it != request.query.end()) {
    if (name.empty()) {
      reply->status = 400;
      reply->body = "setvalue needs a setting: /flags/NAME?setvalue=VALUE\n";
      return;
    }
    SetValue(view, settings, request, name, it->second, reply);
    return;
  }
  if (RejectUnlessGet(request, reply)) return;
  std::vector<ServerSetting> list = settings.List();
  if (!name.empty()) {
    std::erase_if(list, [&](const ServerSetting& s) { return s.name != name; });
    if (list.empty()) {
      reply->status = 404;
      reply->body = "no setting named '" + name + "' (/flags lists them)\n";
      return;
    }
  }
  const std::vector<SettingChange> changes =
      name.empty() ? settings.Changes() : std::vector<SettingChange>{};
  if (WantsJson(request)) {
    reply->content_type = "application/json";
    reply->body = Json(list, changes);
  } else if (WantsHtml(request)) {
    reply->content_type = "text/html; charset=utf-8";
    reply->body = Html(list, changes, view.Options().settings_from_pages);
  } else {
    reply->body = Text(list, changes);
  }
}

}  // namespace

void AddFlagsPage(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view,
                  std::shared_ptr<stats::ServerSettings> settings) {
  auto page = [settings](const stats::ServerView& v, const BuiltinRequest& request,
                         BuiltinReply* reply) { ServeFlags(v, *settings, request, reply); };
  registry->Add("/flags", "every setting, live ones changeable with /flags/NAME?setvalue=VALUE",
                BindView(view, page));
  registry->Add("/flags/", "one setting; ?setvalue=VALUE changes a live one",
                BindView(view, page));
}

}  // namespace arenarpc::builtin
