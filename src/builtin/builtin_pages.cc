#include "builtin/builtin_pages.h"

#include "builtin/connections_page.h"
#include "builtin/flags_page.h"
#include "builtin/hotspots_page.h"
#include "builtin/memory_page.h"
#include "builtin/metrics_page.h"
#include "builtin/rpcz_page.h"
#include "builtin/status_page.h"
#include "builtin/vars_page.h"

namespace arenarpc::builtin {

void AddObservabilityPages(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view,
                           std::shared_ptr<stats::ServerSettings> settings) {
  AddStatusPage(registry, view);
  AddVarsPage(registry, view);
  AddMetricsPage(registry, view);
  AddConnectionsPage(registry, view);
  AddMemoryPage(registry, view);
  AddFlagsPage(registry, view, std::move(settings));
  AddHotspotsPages(registry);
  AddRpczPage(registry);
}

}  // namespace arenarpc::builtin
