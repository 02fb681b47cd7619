#include "client/call_registry.h"

#include "call/client_cancel_hook.h"

namespace arenarpc::client {

CallRegistry& CallRegistry::Instance() {
  static CallRegistry registry;
  return registry;
}

// Controller::StartCancel() finds client calls through this (call/ does not depend on client/).
CallRegistry::CallRegistry() {
  call::InstallClientCancel([](uint64_t id) { arenarpc::StartCancel(CallId{id}); });
}

void CallRegistry::Add(uint64_t id, const std::shared_ptr<ClientCall>& call) {
  Shard& shard = ShardOf(id);
  std::lock_guard lock(shard.mutex);
  shard.calls[id] = Entry{call.get(), call};
}

void CallRegistry::Remove(uint64_t id, const ClientCall* call) {
  Shard& shard = ShardOf(id);
  std::lock_guard lock(shard.mutex);
  auto it = shard.calls.find(id);
  if (it != shard.calls.end() && it->second.raw == call) shard.calls.erase(it);
}

std::shared_ptr<ClientCall> CallRegistry::Find(uint64_t id) {
  Shard& shard = ShardOf(id);
  std::lock_guard lock(shard.mutex);
  auto it = shard.calls.find(id);
  return it == shard.calls.end() ? nullptr : it->second.call.lock();
}

}  // namespace arenarpc::client

namespace arenarpc {

void Join(CallId id) {
  if (auto call = client::CallRegistry::Instance().Find(id.value)) call->WaitFinished();
}

void StartCancel(CallId id) {
  if (auto call = client::CallRegistry::Instance().Find(id.value)) call->Cancel();
}

}  // namespace arenarpc
