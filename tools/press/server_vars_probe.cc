#include "press/server_vars_probe.h"

#include <chrono>

#include "press/server_vars_fetch.h"

namespace arenarpc::press {
namespace {
constexpr std::chrono::milliseconds kTimeout{1000};
}  // namespace

void ServerVarsProbe::AtWindowStart() {
  std::string body;
  if (FetchVars(server_, kTimeout, &body, &note_)) before_ = ParseVars(body);
}

void ServerVarsProbe::AtWindowEnd(PressResult& result) {
  result.server_view_read = true;
  std::string body;
  if (before_ && FetchVars(server_, kTimeout, &body, &note_)) {
    result.server_view = ComputeServerView(*before_, ParseVars(body), method_);
  } else {
    result.server_view.note = note_;
  }
}

}  // namespace arenarpc::press
