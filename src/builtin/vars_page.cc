#include "builtin/vars_page.h"

#include "builtin/page_format.h"
#include "builtin/page_view.h"
#include "stats/vars.h"

namespace arenarpc::builtin {
namespace {

void ServeVars(const stats::ServerView& view, const BuiltinRequest& request, BuiltinReply* reply) {
  if (RejectUnlessGet(request, reply)) return;
  std::string prefix;
  if (const auto it = request.query.find("prefix"); it != request.query.end()) {
    prefix = it->second;
  } else if (request.path.starts_with("/vars/")) {
    prefix = request.path.substr(6);
  }
  reply->content_type = "text/plain; charset=utf-8";
  reply->body =
      stats::FormatVars(stats::CollectVars(view, std::chrono::steady_clock::now()), prefix);
}

}  // namespace

void AddVarsPage(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view) {
  registry->Add("/vars", "every counter and gauge (name : value; ?prefix= filters)",
                BindView(view, ServeVars));
  registry->Add("/vars/", "the vars whose names start with the rest of the path",
                BindView(view, ServeVars));
}

}  // namespace arenarpc::builtin
