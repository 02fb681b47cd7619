#pragma once
// /rpcz: the sampled spans of this process's calls (arenarpc/rpcz.h), server and client side.
//   /rpcz                      the latest spans; ?view=slowest | failed
//   ?method=pkg.Service.Method ?min_latency_ms=N ?error=1 ?limit=N   filters (limit <= 1000)
//   ?trace=<hex trace id>      every span of one trace the process holds, as a tree on a timeline
//   ?format=json | html        (text otherwise; a browser gets HTML)
// The spans come from the process's bounded store (stats/span_store.h), not from the server.

#include "builtin/builtin_registry.h"

namespace arenarpc::builtin {

void AddRpczPage(BuiltinRegistry* registry);

}  // namespace arenarpc::builtin
