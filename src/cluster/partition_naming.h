#pragma once
// PartitionNaming: one naming service split by server tag into one view per partition (what a
// PartitionChannel's sub-channels follow). The source is started once; each view lists the
// servers whose tag the parser maps to its partition, and follows the source's changes.

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/naming_service.h"

namespace arenarpc::cluster {

class PartitionNaming : public std::enable_shared_from_this<PartitionNaming> {
 public:
  // tag -> partition index in [0, partitions); false = the server is in no partition.
  using Parser = std::function<bool(const std::string& tag, int* index)>;

  PartitionNaming(std::unique_ptr<NamingService> source, int partitions, Parser parser);
  ~PartitionNaming();
  PartitionNaming(const PartitionNaming&) = delete;
  PartitionNaming& operator=(const PartitionNaming&) = delete;

  // Starts the source (its first list is split before this returns).
  bool Start(std::string* error);
  void Stop();
  // A naming service listing partition `index`; Start() it after this object's Start().
  std::unique_ptr<NamingService> View(int index);

 private:
  class PartitionView;
  void OnList(ServerList servers);
  void Attach(int index, NamingService::Listener listener);
  void Detach(int index);

  const std::unique_ptr<NamingService> source_;
  const Parser parser_;
  std::mutex mutex_;  // held while a view's listener runs, so Detach() waits for it
  std::vector<ServerList> lists_;
  std::vector<NamingService::Listener> listeners_;
};

}  // namespace arenarpc::cluster
