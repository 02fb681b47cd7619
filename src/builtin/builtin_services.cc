#include "builtin/builtin_services.h"

#include "builtin/health_page.h"
#include "builtin/index_page.h"
#include "builtin/version_page.h"

namespace arenarpc::builtin {

void AddCoreBuiltinServices(BuiltinRegistry* registry, const Server& /*server*/) {
  AddIndexPage(registry);
  AddHealthPage(registry);
  AddVersionPage(registry);
}

}  // namespace arenarpc::builtin
