#include "builtin/builtin_services.h"

#include "builtin/builtin_pages.h"
#include "builtin/health_page.h"
#include "builtin/index_page.h"
#include "builtin/version_page.h"
#include "server/server_access.h"

namespace arenarpc::builtin {

void AddCoreBuiltinServices(BuiltinRegistry* registry, const Server& server) {
  AddIndexPage(registry);
  AddHealthPage(registry);
  AddVersionPage(registry);
  AddObservabilityPages(registry, internal::ServerAccess::State(server));
}

}  // namespace arenarpc::builtin
