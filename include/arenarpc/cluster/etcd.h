#pragma once
// etcd support (the arenarpc::etcd component, built with ARENARPC_WITH_GRPC): link it and include
// this header once anywhere in the program; Channel::Init then accepts
// "etcd://host:port[,host:port]/prefix" and ServerOptions::registry_url "etcd://host:port/prefix";
// both take timing parameters as a query ("...?watch_deadline_ms=3000"). See docs/cluster.md.

namespace arenarpc {

// Registers the etcd:// naming service and server registration. Idempotent, thread-safe.
bool EnableEtcd();

namespace internal {
// Including this header is enough: the registration runs before main().
inline const bool etcd_enabled = EnableEtcd();
}  // namespace internal

}  // namespace arenarpc
