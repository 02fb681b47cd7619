#pragma once
// NamingService: where a cluster channel learns its servers. Chosen by the scheme of the URL given
// to Channel::Init ("list://", "file://", "dns://", "etcd://"). A naming service pushes the whole
// current list to its listener whenever it changes; one that fails keeps the last good list (the
// listener is simply not called) and logs, rate-limited.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "cluster/server_node.h"

namespace arenarpc::cluster {

struct NamingOptions {
  // How often dns:// re-resolves and file:// checks its file.
  std::chrono::milliseconds refresh_interval{5000};
};

class NamingService {
 public:
  using Listener = std::function<void(ServerList)>;
  virtual ~NamingService() = default;

  // Fetches the first list (bounded in time: etcd's call_timeout_ms), hands it to `listener`
  // before returning, then follows changes in the background. False with *error if the first
  // fetch failed; the service is then stopped.
  virtual bool Start(Listener listener, std::string* error) = 0;
  // Stops following; the listener is not called once Stop() returned. Idempotent.
  virtual void Stop() = 0;
};

// What a scheme's factory gets: the text after "scheme://".
using NamingFactory = std::function<std::unique_ptr<NamingService>(
    std::string_view target, const NamingOptions& options, std::string* error)>;

// Adds a scheme (the etcd component registers "etcd"). Thread-safe; false if it already exists.
bool RegisterNamingScheme(std::string scheme, NamingFactory factory);

// "scheme://target" -> a naming service (not started). nullptr with *error naming the problem
// (unknown scheme, malformed target).
std::unique_ptr<NamingService> MakeNamingService(std::string_view url, const NamingOptions& options,
                                                 std::string* error);

// Built-in schemes (list_naming.cc, file_naming.cc, dns_naming.cc).
std::unique_ptr<NamingService> MakeListNaming(std::string_view target, const NamingOptions& options,
                                              std::string* error);
std::unique_ptr<NamingService> MakeFileNaming(std::string_view target, const NamingOptions& options,
                                              std::string* error);
std::unique_ptr<NamingService> MakeDnsNaming(std::string_view target, const NamingOptions& options,
                                             std::string* error);

}  // namespace arenarpc::cluster
