#include "server/serving_status_table.h"

#include <utility>

namespace arenarpc::server {

void ServingStatusTable::SetKnown(std::vector<std::string> services) {
  std::lock_guard lock(mutex_);
  known_.clear();
  for (std::string& service : services) known_.insert(std::move(service));
  changed_.notify_all();
}

void ServingStatusTable::Set(std::string_view service, bool serving) {
  std::lock_guard lock(mutex_);
  if (shut_down_) return;
  set_.insert_or_assign(std::string(service), serving);
  changed_.notify_all();
}

void ServingStatusTable::SetAll(bool serving) {
  std::lock_guard lock(mutex_);
  if (shut_down_) return;
  default_serving_ = serving;
  for (auto& [service, value] : set_) value = serving;
  set_.insert_or_assign(std::string(), serving);
  changed_.notify_all();
}

void ServingStatusTable::Shutdown() {
  std::lock_guard lock(mutex_);
  shut_down_ = true;
  changed_.notify_all();
}

ServingStatus ServingStatusTable::GetLocked(std::string_view service) const {
  bool serving = default_serving_;
  if (auto it = set_.find(service); it != set_.end()) {
    serving = it->second;
  } else if (!service.empty() && known_.find(service) == known_.end()) {
    return ServingStatus::kServiceUnknown;
  }
  return serving && !shut_down_ ? ServingStatus::kServing : ServingStatus::kNotServing;
}

ServingStatus ServingStatusTable::Get(std::string_view service) const {
  std::lock_guard lock(mutex_);
  return GetLocked(service);
}

bool ServingStatusTable::shut_down() const {
  std::lock_guard lock(mutex_);
  return shut_down_;
}

ServingStatus ServingStatusTable::WaitChange(std::string_view service, ServingStatus last,
                                             const std::function<bool()>& stop) {
  std::unique_lock lock(mutex_);
  for (;;) {
    const ServingStatus now = GetLocked(service);
    if (now != last || shut_down_ || stop()) return now;
    changed_.wait(lock);
  }
}

void ServingStatusTable::Wake() {
  std::lock_guard lock(mutex_);
  changed_.notify_all();
}

}  // namespace arenarpc::server
