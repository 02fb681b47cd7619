#pragma once
// CancelSource: what answers a server Controller's IsCanceled()/NotifyOnCancel() (the server
// call owning the controller). Client controllers have none.

#include <google/protobuf/stubs/callback.h>

namespace arenarpc::internal {

class CancelSource {
 public:
  virtual bool IsCanceled() const = 0;
  virtual void NotifyOnCancel(google::protobuf::Closure* callback) = 0;

 protected:
  ~CancelSource() = default;
};

}  // namespace arenarpc::internal
