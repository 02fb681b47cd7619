#pragma once
// Interceptors (docs/interceptors.md): code that sees every call before its handler runs (server)
// or before it is sent and after it completed (client), and may refuse it. A list of them runs in
// order; the first refusal wins. Same error convention as the Authenticator: 0 = go on, anything
// else refuses the call.

#include <string>

#include "arenarpc/controller.h"

namespace google::protobuf {
class Message;
class MethodDescriptor;
}  // namespace google::protobuf

namespace arenarpc {

// One server call as an interceptor sees it: its request parsed, its handler not run yet.
struct InterceptedServerCall {
  const google::protobuf::MethodDescriptor& method;
  // remote_side(), tls_peer() (mTLS identity), auth_context() (the Authenticator's),
  // request_user_fields() (gRPC metadata, HTTP headers), log_id(), deadline_hint_ms()...
  // An interceptor may also set response_user_fields().
  Controller& controller;
  const google::protobuf::Message& request;
};

class ServerInterceptor {
 public:
  virtual ~ServerInterceptor() = default;
  // 0 = the call goes on (the next interceptor, then the handler). Anything else refuses it: the
  // handler does not run and the client gets that error code (a negative value: EREJECT, 1018)
  // with *error_text ("Rejected by interceptor" when left empty); the method's stats count it as a
  // failed call. Runs on the call's fiber, where the handler would run, concurrently with other
  // calls. An exception refuses the call with EINTERNAL.
  virtual int Intercept(const InterceptedServerCall& call, std::string* error_text) const = 0;
};

// One client call as a ClientInterceptor sees it before it is sent.
struct InterceptedClientCall {
  const google::protobuf::MethodDescriptor& method;
  // request_user_fields() (sent as baidu_std user_fields), log_id, timeout... may be changed.
  Controller& controller;
  const google::protobuf::Message& request;
};

class ClientInterceptor {
 public:
  virtual ~ClientInterceptor() = default;
  // Before the call is sent, on the calling thread. 0 = send it (after the next interceptors).
  // Anything else fails the call without sending it: that code (a negative value: EREJECT, 1018)
  // and *error_text. `credential`: sent as the request's credential (baidu_std
  // authentication_data, gRPC `authorization` metadata), initially empty; a non-empty one set here is sent instead of
  // ChannelOptions::auth's (which is then not generated). An exception fails the call with
  // EINTERNAL.
  virtual int BeforeSend(const InterceptedClientCall& call, std::string* credential,
                         std::string* error_text) const {
    return 0;
  }
  // Once the call completed (a reply, an error, a timeout, or a refusal by a BeforeSend), before
  // its caller hears of it: for a synchronous call on the caller's thread, for an asynchronous
  // one just before its `done`, on the thread that runs it. Every interceptor of the list, last
  // first. The outcome is on `controller` (Failed(), ErrorCode(), response_user_fields(),
  // latency_us()); `response` is filled only when !Failed(). The request is not shown: an
  // asynchronous call's may be gone. Exceptions are swallowed.
  virtual void AfterReceive(const google::protobuf::MethodDescriptor& method,
                            Controller& controller,
                            const google::protobuf::Message& response) const {}
};

}  // namespace arenarpc
