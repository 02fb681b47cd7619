// A Server's entry in etcd: key "<prefix><ip:port>", value "ip:port weight[ tag]", attached to a
// lease of registry_lease_ttl. A background thread refreshes the lease every TTL/3; if the lease
// is gone (etcd lost it, or this process was paused past the TTL) it grants a new one and puts
// the key again. Stop() deletes the key and revokes the lease; a crashed server's key goes when
// its lease expires.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "cluster/etcd/etcd_client.h"
#include "cluster/etcd/etcd_components.h"
#include "util/rate_limited_log.h"

namespace arenarpc::cluster::etcd {
namespace {

class EtcdRegistration final : public ServerRegistration {
 public:
  EtcdRegistration(EtcdTarget target, const RegistrationInfo& info)
      : target_(std::move(target)),
        key_(target_.prefix + info.address),
        value_(info.address + " " + std::to_string(info.weight) +
               (info.tag.empty() ? "" : " " + info.tag)),
        ttl_s_(info.lease_ttl_s),
        client_(target_.endpoints, target_.timings) {}
  ~EtcdRegistration() override { Stop(); }

  bool Start(std::string* error) override {
    if (!Publish(error)) return false;
    const auto interval = std::chrono::milliseconds(std::max<int64_t>(ttl_s_ * 1000 / 3, 100));
    thread_ = std::thread([this, interval] {
      while (SleepFor(interval)) KeepAlive();
    });
    return true;
  }

  void Stop() override {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    if (lease_id_ == 0) return;
    etcdserverpb::DeleteRangeRequest remove;
    remove.set_key(key_);
    etcdserverpb::DeleteRangeResponse removed;
    const grpc::Status status =
        client_.kv().DeleteRange(CallContext().get(), remove, &removed);
    if (!status.ok()) log_.Log("etcd: cannot delete " + key_ + ": " + status.error_message());
    etcdserverpb::LeaseRevokeRequest revoke;
    revoke.set_id(lease_id_);
    etcdserverpb::LeaseRevokeResponse revoked;
    client_.lease().LeaseRevoke(CallContext().get(), revoke, &revoked);
    lease_id_ = 0;
  }

 private:
  // A new lease and the key on it.
  bool Publish(std::string* error) {
    etcdserverpb::LeaseGrantRequest grant;
    grant.set_ttl(ttl_s_);
    etcdserverpb::LeaseGrantResponse granted;
    grpc::Status status =
        client_.lease().LeaseGrant(CallContext().get(), grant, &granted);
    if (status.ok() && !granted.error().empty()) {
      status = grpc::Status(grpc::StatusCode::UNKNOWN, granted.error());
    }
    if (!status.ok()) {
      *error = "etcd " + client_.endpoint() + ": LeaseGrant failed: " + status.error_message();
      client_.Rotate();
      return false;
    }
    etcdserverpb::PutRequest put;
    put.set_key(key_);
    put.set_value(value_);
    put.set_lease(granted.id());
    etcdserverpb::PutResponse put_response;
    status = client_.kv().Put(CallContext().get(), put, &put_response);
    if (!status.ok()) {
      *error = "etcd " + client_.endpoint() + ": Put " + key_ + " failed: " + status.error_message();
      client_.Rotate();
      return false;
    }
    lease_id_ = granted.id();
    return true;
  }

  void KeepAlive() {
    if (lease_id_ != 0) {
      auto context = CallContext();
      auto stream = client_.lease().LeaseKeepAlive(context.get());
      etcdserverpb::LeaseKeepAliveRequest request;
      request.set_id(lease_id_);
      etcdserverpb::LeaseKeepAliveResponse response;
      const bool answered = stream->Write(request) && stream->Read(&response);
      stream->WritesDone();
      context->TryCancel();
      stream->Finish();
      if (answered && response.ttl() > 0) return;
      if (!answered) {
        // etcd unreachable: the lease may still be alive there; try it again next time.
        log_.Log("etcd " + client_.endpoint() + ": keep-alive of " + key_ + " got no answer");
        client_.Rotate();
        return;
      }
      lease_id_ = 0;  // expired: publish again
    }
    std::string error;
    if (!Publish(&error)) log_.Log(error + " (will retry)");
  }

  std::unique_ptr<grpc::ClientContext> CallContext() const {
    return ContextWithTimeout(target_.timings.call_timeout);
  }

  bool SleepFor(std::chrono::milliseconds duration) {
    std::unique_lock lock(mutex_);
    return !wake_.wait_for(lock, duration, [this] { return stopping_; });
  }

  const EtcdTarget target_;
  const std::string key_, value_;
  const int ttl_s_;
  EtcdClient client_;
  int64_t lease_id_ = 0;
  util::RateLimitedLog log_{1};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<ServerRegistration> MakeEtcdRegistration(std::string_view target,
                                                         const RegistrationInfo& info,
                                                         std::string* error) {
  EtcdTarget parsed;
  if (!ParseEtcdTarget(target, &parsed, error)) return nullptr;
  if (info.lease_ttl_s < 1) {
    *error = "lease TTL " + std::to_string(info.lease_ttl_s) + " s must be >= 1 s";
    return nullptr;
  }
  return std::make_unique<EtcdRegistration>(std::move(parsed), info);
}

}  // namespace arenarpc::cluster::etcd
