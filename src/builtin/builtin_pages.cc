#include "builtin/builtin_pages.h"

#include "builtin/connections_page.h"
#include "builtin/flags_page.h"
#include "builtin/memory_page.h"
#include "builtin/metrics_page.h"
#include "builtin/status_page.h"
#include "builtin/vars_page.h"

namespace arenarpc::builtin {

void AddObservabilityPages(BuiltinRegistry* registry, std::shared_ptr<server::ServerState> state) {
  AddStatusPage(registry, state);
  AddVarsPage(registry, state);
  AddMetricsPage(registry, state);
  AddConnectionsPage(registry, state);
  AddMemoryPage(registry, state);
  AddFlagsPage(registry, state);
}

}  // namespace arenarpc::builtin
