#pragma once
// The serving status grpc.health.v1.Health reports per service (Check answers it, Watch streams
// its changes): every registered service and "" (the server as a whole) are SERVING until the
// application says otherwise (Server::SetServingStatus); from Shutdown() (Stop() begins) on every
// one is NOT_SERVING and further changes are ignored, as in gRPC. Thread-safe; Watch's handler
// waits on a fiber condition variable.

#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "arenarpc/fiber.h"

namespace arenarpc::server {

// grpc.health.v1.HealthCheckResponse.ServingStatus, with its wire values.
enum class ServingStatus : int { kUnknown = 0, kServing = 1, kNotServing = 2, kServiceUnknown = 3 };

class ServingStatusTable {
 public:
  // The services that exist without being set (the registered ones, at Start()).
  void SetKnown(std::vector<std::string> services);
  void Set(std::string_view service, bool serving);
  // Every service set so far, every known one and "".
  void SetAll(bool serving);
  // NOT_SERVING for every service from now on; later Set/SetAll calls are ignored.
  void Shutdown();

  // kServing / kNotServing, or kServiceUnknown for a name neither known nor set.
  ServingStatus Get(std::string_view service) const;
  bool shut_down() const;

  // Waits until Get(service) differs from `last`, Shutdown(), or `stop()` (checked on every
  // Wake()) is true; returns Get(service) then.
  ServingStatus WaitChange(std::string_view service, ServingStatus last,
                           const std::function<bool()>& stop);
  // Makes the waits check their stop() again.
  void Wake();

 private:
  ServingStatus GetLocked(std::string_view service) const;

  mutable std::mutex mutex_;
  fiber::ConditionVariable changed_;
  std::map<std::string, bool, std::less<>> set_;  // by Set(): serving?
  std::set<std::string, std::less<>> known_;
  bool default_serving_ = true;  // known services not Set()
  bool shut_down_ = false;
};

}  // namespace arenarpc::server
