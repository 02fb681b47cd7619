#pragma once
// /: every registered page with its description (text; "?format=json": a JSON array).

#include "builtin/builtin_registry.h"

namespace arenarpc::builtin {

// Lists what `registry` holds when asked, so pages added later show up too.
void AddIndexPage(BuiltinRegistry* registry);

}  // namespace arenarpc::builtin
