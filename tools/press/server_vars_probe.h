#pragma once
// ServerVarsProbe: reads the server's /vars when the measured window opens and after it closed,
// and puts the server's view of the window (or why there is none) into the result.

#include <optional>
#include <string>

#include "press/press_result.h"
#include "press/server_vars.h"

namespace arenarpc::press {

class ServerVarsProbe {
 public:
  ServerVarsProbe(std::string server, std::string method_full_name)
      : server_(std::move(server)), method_(std::move(method_full_name)) {}
  void AtWindowStart();
  void AtWindowEnd(PressResult& result);

 private:
  std::string server_, method_, note_;
  std::optional<VarsMap> before_;
};

}  // namespace arenarpc::press
