#pragma once
// /version: the arenarpc version (CMake's PROJECT_VERSION); "?format=json": {"version":"x.y.z"}.

#include "builtin/builtin_registry.h"

namespace arenarpc::builtin {

void AddVersionPage(BuiltinRegistry* registry);

}  // namespace arenarpc::builtin
