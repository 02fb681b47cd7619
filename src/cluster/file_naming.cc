// file://path: one "host:port[ weight[ tag]]" a line ('#' starts a comment). The file's mtime and
// size are checked every refresh interval (at most 500 ms) and the file re-read when they change.
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cluster/naming_service.h"
#include "cluster/periodic_worker.h"
#include "util/rate_limited_log.h"

namespace arenarpc::cluster {
namespace {

struct FileVersion {
  timespec mtime{};
  off_t size = -1;
  bool operator==(const FileVersion& o) const {
    return mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec && size == o.size;
  }
};

class FileNaming final : public NamingService {
 public:
  FileNaming(std::string path, std::chrono::milliseconds interval)
      : path_(std::move(path)), interval_(interval) {}
  ~FileNaming() override { Stop(); }

  bool Start(Listener listener, std::string* error) override {
    listener_ = std::move(listener);
    ServerList servers;
    if (!Load(&servers, error)) return false;
    listener_(std::move(servers));
    worker_.Start(interval_, [this] { Poll(); });
    return true;
  }
  void Stop() override { worker_.Stop(); }

 private:
  bool Load(ServerList* servers, std::string* error) {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) {
      *error = "file://" + path_ + ": cannot stat: " + std::strerror(errno);
      return false;
    }
    version_ = FileVersion{st.st_mtim, st.st_size};
    std::ifstream in(path_);
    if (!in) {
      *error = "file://" + path_ + ": cannot open";
      return false;
    }
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      ServerNode node;
      if (!ParseServerNode(line, &node, error)) {
        *error = "file://" + path_ + " line " + std::to_string(number) + ": " + *error;
        return false;
      }
      servers->push_back(std::move(node));
    }
    Normalize(servers);
    return true;
  }

  void Poll() {
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0 && FileVersion{st.st_mtim, st.st_size} == version_) return;
    ServerList servers;
    std::string error;
    if (!Load(&servers, &error)) {
      log_.Log(error + " (keeping the last good list)");
      return;
    }
    listener_(std::move(servers));
  }

  const std::string path_;
  const std::chrono::milliseconds interval_;
  Listener listener_;
  FileVersion version_;
  util::RateLimitedLog log_{1};
  PeriodicWorker worker_;
};

}  // namespace

std::unique_ptr<NamingService> MakeFileNaming(std::string_view target,
                                              const NamingOptions& options, std::string* error) {
  if (target.empty()) {
    *error = "file:// needs a path (file:///etc/servers or file://relative/path)";
    return nullptr;
  }
  return std::make_unique<FileNaming>(
      std::string(target), std::min(options.refresh_interval, std::chrono::milliseconds(500)));
}

}  // namespace arenarpc::cluster
