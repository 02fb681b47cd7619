#pragma once
// CallRegistry: the client calls in flight by CallId, so that Join()/StartCancel() can find them.
// A call is registered when it starts and removed once it finished (done returned). Sharded to
// keep concurrent calls from contending on one lock.

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "client/client_call.h"

namespace arenarpc::client {

class CallRegistry {
 public:
  static CallRegistry& Instance();

  void Add(uint64_t id, const std::shared_ptr<ClientCall>& call);
  // Removes `id` only if it still names `call` (a reused controller may have started another).
  void Remove(uint64_t id, const ClientCall* call);
  std::shared_ptr<ClientCall> Find(uint64_t id);

 private:
  CallRegistry();

  struct Entry {
    const ClientCall* raw;
    std::weak_ptr<ClientCall> call;
  };
  struct Shard {
    std::mutex mutex;
    std::unordered_map<uint64_t, Entry> calls;
  };
  Shard& ShardOf(uint64_t id) noexcept { return shards_[id % shards_.size()]; }

  std::array<Shard, 16> shards_;
};

}  // namespace arenarpc::client
