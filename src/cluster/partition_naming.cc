#include "cluster/partition_naming.h"

namespace arenarpc::cluster {

class PartitionNaming::PartitionView final : public NamingService {
 public:
  PartitionView(std::shared_ptr<PartitionNaming> hub, int index)
      : hub_(std::move(hub)), index_(index) {}
  ~PartitionView() override { Stop(); }
  bool Start(Listener listener, std::string*) override {
    hub_->Attach(index_, std::move(listener));
    return true;
  }
  void Stop() override { hub_->Detach(index_); }

 private:
  const std::shared_ptr<PartitionNaming> hub_;
  const int index_;
};

PartitionNaming::PartitionNaming(std::unique_ptr<NamingService> source, int partitions,
                                 Parser parser)
    : source_(std::move(source)), parser_(std::move(parser)), lists_(partitions),
      listeners_(partitions) {}

PartitionNaming::~PartitionNaming() { Stop(); }

bool PartitionNaming::Start(std::string* error) {
  // The source outlives its listener: Stop() stops it before this object goes.
  return source_->Start([this](ServerList servers) { OnList(std::move(servers)); }, error);
}

void PartitionNaming::Stop() { source_->Stop(); }

std::unique_ptr<NamingService> PartitionNaming::View(int index) {
  return std::make_unique<PartitionView>(shared_from_this(), index);
}

void PartitionNaming::OnList(ServerList servers) {
  std::vector<ServerList> split(lists_.size());
  for (ServerNode& node : servers) {
    int index = -1;
    if (parser_(node.tag, &index) && index >= 0 && index < static_cast<int>(split.size())) {
      split[index].push_back(std::move(node));
    }
  }
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < split.size(); ++i) {
    if (split[i] == lists_[i]) continue;
    lists_[i] = split[i];
    if (listeners_[i]) listeners_[i](std::move(split[i]));
  }
}

void PartitionNaming::Attach(int index, NamingService::Listener listener) {
  std::lock_guard lock(mutex_);
  listeners_[index] = std::move(listener);
  listeners_[index](lists_[index]);
}

void PartitionNaming::Detach(int index) {
  std::lock_guard lock(mutex_);
  listeners_[index] = nullptr;
}

}  // namespace arenarpc::cluster
