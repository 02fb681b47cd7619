#include "builtin/vars_page.h"

#include "builtin/page_format.h"
#include "builtin/page_state.h"
#include "stats/vars.h"

namespace arenarpc::builtin {
namespace {

void ServeVars(server::ServerState& state, const BuiltinRequest& request, BuiltinReply* reply) {
  if (RejectUnlessGet(request, reply)) return;
  std::string prefix;
  if (const auto it = request.query.find("prefix"); it != request.query.end()) {
    prefix = it->second;
  } else if (request.path.starts_with("/vars/")) {
    prefix = request.path.substr(6);
  }
  reply->content_type = "text/plain; charset=utf-8";
  reply->body =
      stats::FormatVars(stats::CollectVars(state, std::chrono::steady_clock::now()), prefix);
}

}  // namespace

void AddVarsPage(BuiltinRegistry* registry, std::shared_ptr<server::ServerState> state) {
  registry->Add("/vars", "every counter and gauge (name : value; ?prefix= filters)",
                BindState(state, ServeVars));
  registry->Add("/vars/", "the vars whose names start with the rest of the path",
                BindState(state, ServeVars));
}

}  // namespace arenarpc::builtin
