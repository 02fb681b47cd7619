// etcd://host:port[,host:port]/prefix[?timings]: the servers are the keys under "<prefix>/" (the
// key's last part is "ip:port"; the value, if not empty, is "ip:port[ weight[ tag]]" and wins).
// Start() reads them (KV.Range); a background thread then follows changes through Watch.Watch from
// the next revision. When the watch breaks (etcd down or restarting) the last list stays, the
// failure is logged (rate-limited) and the thread re-reads and re-watches every retry_interval
// until etcd answers, moving to the next endpoint after each failure.
//
// A host that vanishes silently (no RST: a dead machine, a blackholing network) does not break a
// stream, so a second thread asks etcd for a progress notification every progress_interval and
// cancels a watch that heard nothing for watch_deadline; it also warns while the list has not been
// confirmed by etcd (a Range, an event or a progress notification) for stale_after.
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "cluster/etcd/etcd_client.h"
#include "cluster/etcd/etcd_components.h"
#include "cluster/naming_service.h"
#include "util/rate_limited_log.h"

namespace arenarpc::cluster::etcd {
namespace {

using Clock = std::chrono::steady_clock;

class EtcdNaming final : public NamingService {
 public:
  explicit EtcdNaming(EtcdTarget target)
      : target_(std::move(target)),
        timings_(target_.timings),
        range_end_(PrefixRangeEnd(target_.prefix)),
        client_(target_.endpoints, timings_) {}
  ~EtcdNaming() override { Stop(); }

  bool Start(Listener listener, std::string* error) override {
    listener_ = std::move(listener);
    if (!Resync(error)) return false;
    thread_ = std::thread([this] { Follow(); });
    monitor_ = std::thread([this] { Monitor(); });
    return true;
  }

  void Stop() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      if (watch_context_) watch_context_->TryCancel();
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    if (monitor_.joinable()) monitor_.join();
  }

 private:
  // Reads every key under the prefix; replaces the map and pushes the list.
  bool Resync(std::string* error) {
    etcdserverpb::RangeRequest request;
    request.set_key(target_.prefix);
    request.set_range_end(range_end_);
    etcdserverpb::RangeResponse response;
    const grpc::Status status =
        client_.kv().Range(ContextWithTimeout(timings_.call_timeout).get(), request, &response);
    if (!status.ok()) {
      *error = "etcd " + client_.endpoint() + ": Range " + target_.prefix + " failed: " +
               status.error_message();
      client_.Rotate();
      return false;
    }
    servers_.clear();
    for (const mvccpb::KeyValue& kv : response.kvs()) Apply(kv);
    revision_ = response.header().revision();
    Confirmed();
    Push();
    return true;
  }

  // etcd just told us the list is current.
  void Confirmed() {
    confirmed_at_ns_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  }

  void Apply(const mvccpb::KeyValue& kv) {
    const std::string& key = kv.key();
    const std::string_view text = kv.value().empty()
                                      ? std::string_view(key).substr(target_.prefix.size())
                                      : std::string_view(kv.value());
    ServerNode node;
    std::string error;
    if (!ParseServerNode(text, &node, &error)) {
      log_.Log("etcd key " + key + " skipped: " + error);
      servers_.erase(key);
      return;
    }
    servers_[key] = std::move(node);
  }

  void Push() {
    ServerList list;
    for (const auto& [key, node] : servers_) list.push_back(node);
    Normalize(&list);
    if (pushed_once_ && list == last_pushed_) return;
    pushed_once_ = true;
    last_pushed_ = list;
    listener_(std::move(list));
  }

  // One watch stream from revision_ + 1 until it breaks; true if stopping.
  void WatchOnce() {
    auto context = std::make_shared<grpc::ClientContext>();
    heard_at_ns_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      watch_context_ = context;
    }
    auto stream = client_.watch().Watch(context.get());
    etcdserverpb::WatchRequest request;
    auto* create = request.mutable_create_request();
    create->set_key(target_.prefix);
    create->set_range_end(range_end_);
    create->set_start_revision(revision_ + 1);
    create->set_progress_notify(true);
    etcdserverpb::WatchResponse response;
    // The monitor's deadline covers this Write too (it cancels the context).
    const bool created = stream->Write(request);
    if (created) {
      std::lock_guard lock(stream_mutex_);
      stream_ = stream.get();  // the monitor may write progress requests now
    }
    if (created) {
      while (stream->Read(&response)) {
        heard_at_ns_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
        if (response.canceled()) break;  // e.g. revision compacted: resync
        Confirmed();  // an event or a progress notification: nothing newer is missing
        for (const mvccpb::Event& event : response.events()) {
          if (event.type() == mvccpb::Event::DELETE) {
            servers_.erase(event.kv().key());
          } else {
            Apply(event.kv());
          }
          revision_ = std::max(revision_, event.kv().mod_revision());
        }
        if (response.events_size() > 0) Push();
      }
    }
    context->TryCancel();
    {
      std::lock_guard lock(stream_mutex_);  // waits for a progress request being written
      stream_ = nullptr;
    }
    const grpc::Status status = stream->Finish();
    {
      std::lock_guard lock(mutex_);
      watch_context_.reset();
      if (stopping_) return;
    }
    const bool silent = watch_silent_.exchange(false);
    log_.Log("etcd " + client_.endpoint() + ": watch of " + target_.prefix + " ended (" +
             (silent ? "no answer for " + std::to_string(timings_.watch_deadline.count()) + " ms"
              : response.canceled() ? response.cancel_reason()
                                    : status.error_message()) +
             "); keeping the last list of " + std::to_string(servers_.size()) + " servers");
    client_.Rotate();
  }

  // Every progress_interval: a progress request on the open watch, the watch's deadline, the
  // stale-list warning.
  void Monitor() {
    etcdserverpb::WatchRequest progress;
    progress.mutable_progress_request();
    Clock::time_point warned_at{};
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        if (wake_.wait_for(lock, timings_.progress_interval, [this] { return stopping_; })) return;
      }
      const Clock::time_point now = Clock::now();
      const auto since = [now](const std::atomic<int64_t>& at_ns) {
        return now - Clock::time_point(Clock::duration(at_ns.load(std::memory_order_relaxed)));
      };
      bool silent = false;
      {
        std::lock_guard lock(mutex_);
        if (watch_context_ && since(heard_at_ns_) > timings_.watch_deadline) {
          silent = true;
          watch_silent_ = true;
          watch_context_->TryCancel();  // the pending Write() or Read() returns false
        }
      }
      if (!silent) {
        std::lock_guard lock(stream_mutex_);
        if (stream_ != nullptr) stream_->Write(progress);
      }
      const auto stale = since(confirmed_at_ns_);
      if (stale > timings_.stale_after && now - warned_at >= timings_.stale_after) {
        warned_at = now;
        Log(LogLevel::kWarning,
            "etcd://" + Endpoints() + target_.prefix + ": server list is stale: not confirmed by " +
                "etcd for " +
                std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(stale).count()) +
                " ms; keeping the last list");
      }
    }
  }

  std::string Endpoints() const {
    std::string all;
    for (const std::string& endpoint : target_.endpoints) all += (all.empty() ? "" : ",") + endpoint;
    return all;
  }

  bool SleepBeforeRetry() {
    std::unique_lock lock(mutex_);
    return !wake_.wait_for(lock, timings_.retry_interval, [this] { return stopping_; });
  }

  void Follow() {
    bool synced = true;  // Start() just read the list
    for (;;) {
      if (!synced) {
        std::string error;
        if (!Resync(&error)) {
          log_.Log(error + " (keeping the last list)");
          if (!SleepBeforeRetry()) return;
          continue;
        }
      }
      WatchOnce();
      synced = false;
      if (!SleepBeforeRetry()) return;
    }
  }

  const EtcdTarget target_;
  const EtcdTimings& timings_;
  const std::string range_end_;
  EtcdClient client_;  // the follow thread's (Start's before it exists)
  Listener listener_;
  std::map<std::string, ServerNode> servers_;  // by key
  int64_t revision_ = 0;
  bool pushed_once_ = false;
  ServerList last_pushed_;
  util::RateLimitedLog log_{1};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::shared_ptr<grpc::ClientContext> watch_context_;
  // The open watch stream, for the monitor's progress requests (Follow() reads it meanwhile).
  std::mutex stream_mutex_;
  grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>* stream_ =
      nullptr;
  std::atomic<int64_t> heard_at_ns_{0}, confirmed_at_ns_{0};  // steady clock
  std::atomic<bool> watch_silent_{false};  // the monitor cancelled the watch
  std::thread thread_;
  std::thread monitor_;
};

}  // namespace

std::unique_ptr<NamingService> MakeEtcdNaming(std::string_view target, const NamingOptions&,
                                              std::string* error) {
  EtcdTarget parsed;
  if (!ParseEtcdTarget(target, &parsed, error)) return nullptr;
  return std::make_unique<EtcdNaming>(std::move(parsed));
}

}  // namespace arenarpc::cluster::etcd
