#include "builtin/builtin_services.h"

#include "builtin/builtin_pages.h"
#include "builtin/health_page.h"
#include "builtin/index_page.h"
#include "builtin/version_page.h"

namespace arenarpc::builtin {

void AddCoreBuiltinServices(BuiltinRegistry* registry,
                            std::shared_ptr<const stats::ServerView> view,
                            std::shared_ptr<stats::ServerSettings> settings) {
  AddIndexPage(registry);
  AddHealthPage(registry);
  AddVersionPage(registry);
  AddObservabilityPages(registry, std::move(view), std::move(settings));
}

}  // namespace arenarpc::builtin
