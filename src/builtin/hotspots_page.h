#pragma once
// /hotspots/cpu, /hotspots/heap, /hotspots/growth: profiles of the live process with gperftools,
// as brpc's pages of the same names. The profilers are found at run time (dlsym), so a server that
// does not load them links nothing more and each page says how to enable it:
//   CPU: libprofiler (link it with -Wl,--no-as-needed -lprofiler, or LD_PRELOAD=libprofiler.so.0);
//   heap, growth: tcmalloc (link or preload libtcmalloc.so.4) with TCMALLOC_SAMPLE_PARAMETER set.
// One profile at a time in the process: a request while one runs gets 503 and when to retry.
// A profile is shown as google-pprof's text top list when google-pprof is on PATH, or sent raw
// with ?format=raw (for `google-pprof --text <binary> <file>` elsewhere).

#include <chrono>
#include <string>

#include "builtin/builtin_registry.h"

namespace arenarpc::builtin {

void AddHotspotsPages(BuiltinRegistry* registry);

// ?seconds= of /hotspots/cpu: 1..kMaxCpuProfile, default kDefaultCpuProfile.
inline constexpr std::chrono::seconds kDefaultCpuProfile{10};
inline constexpr std::chrono::seconds kMaxCpuProfile{120};

}  // namespace arenarpc::builtin
