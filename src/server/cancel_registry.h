#pragma once
// CancelRegistry: one connection's calls that wait for NotifyOnCancel(), so that the connection
// closing (the client went away) fires them. A call registers lazily, on its first
// NotifyOnCancel(), and unregisters when it ends; calls that never ask cost nothing here.

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "server/cancel_state.h"

namespace arenarpc::server {

class CancelRegistry {
 public:
  // Returns a token for Remove(). After Close() the state fires at once instead.
  uint64_t Add(std::shared_ptr<CancelState> state);
  void Remove(uint64_t token);
  // The connection closed: fires every registered state (and any added later).
  void Close();

 private:
  std::mutex mutex_;
  bool closed_ = false;
  uint64_t next_token_ = 1;
  std::unordered_map<uint64_t, std::shared_ptr<CancelState>> states_;
};

}  // namespace arenarpc::server
