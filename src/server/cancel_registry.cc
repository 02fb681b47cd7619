#include "server/cancel_registry.h"

#include <utility>
#include <vector>

namespace arenarpc::server {

uint64_t CancelRegistry::Add(std::shared_ptr<CancelState> state) {
  {
    std::lock_guard lock(mutex_);
    if (!closed_) {
      const uint64_t token = next_token_++;
      states_.emplace(token, std::move(state));
      return token;
    }
  }
  state->Fire();
  return 0;
}

void CancelRegistry::Remove(uint64_t token) {
  std::lock_guard lock(mutex_);
  states_.erase(token);
}

void CancelRegistry::Close() {
  std::unordered_map<uint64_t, std::shared_ptr<CancelState>> states;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    states.swap(states_);
  }
  for (auto& [token, state] : states) state->Fire();  // callbacks run outside the lock
}

}  // namespace arenarpc::server
