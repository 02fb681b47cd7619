#pragma once
// /health: 200 "OK" while the server serves; "?format=json": {"status":"OK"}.

#include "builtin/builtin_registry.h"

namespace arenarpc::builtin {

void AddHealthPage(BuiltinRegistry* registry);

}  // namespace arenarpc::builtin
