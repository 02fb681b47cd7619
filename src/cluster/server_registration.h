#pragma once
// ServerRegistration: a running Server's entry in a registry (ServerOptions::registry_url). Start
// publishes the address and keeps it alive; Stop removes it. The scheme of the URL picks the
// implementation; the etcd component registers "etcd".

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace arenarpc::cluster {

struct RegistrationInfo {
  std::string address;   // "ip:port" clients connect to
  int weight = 1;
  std::string tag;
  int lease_ttl_s = 10;  // a crashed server disappears this long after its last keep-alive
};

class ServerRegistration {
 public:
  virtual ~ServerRegistration() = default;
  // Publishes the entry (bounded wait); false with *error if the registry cannot be reached.
  virtual bool Start(std::string* error) = 0;
  // Removes the entry (bounded wait) and stops keeping it alive. Idempotent.
  virtual void Stop() = 0;
};

// target: the text after "scheme://".
using RegistrationFactory = std::function<std::unique_ptr<ServerRegistration>(
    std::string_view target, const RegistrationInfo& info, std::string* error)>;

bool RegisterRegistryScheme(std::string scheme, RegistrationFactory factory);

// nullptr with *error for an unknown scheme or a malformed URL.
std::unique_ptr<ServerRegistration> MakeServerRegistration(std::string_view url,
                                                           const RegistrationInfo& info,
                                                           std::string* error);

// ServerOptions' registry_* values: empty if valid, else a message naming the option.
std::string ValidateRegistrationOptions(std::chrono::milliseconds lease_ttl, int weight,
                                       std::string_view tag);
// The registry's lease in whole seconds (etcd's unit), rounded up; lease_ttl is validated.
constexpr int LeaseTtlSeconds(std::chrono::milliseconds lease_ttl) {
  return static_cast<int>(std::chrono::ceil<std::chrono::seconds>(lease_ttl).count());
}

// "ip:port" to advertise for a server listening on `listening`: itself, or for an unspecified
// address (0.0.0.0, ::) the first IPv4 address of an interface that is up and not loopback,
// else 127.0.0.1.
std::string AdvertisedAddress(std::string_view listening_ip, int port);

}  // namespace arenarpc::cluster
