#pragma once
// Authenticator: brpc's credential check (docs/auth.md). A Channel with ChannelOptions::auth puts
// GenerateCredential()'s string on its requests (baidu_std: RpcMeta.authentication_data); a Server
// with ServerOptions::auth verifies it — once per connection for baidu_std (its first request, as
// brpc), on every request for HTTP (the Authorization header's value). A refused call gets
// ERPCAUTH (1004) "Fail to authenticate" (HTTP 403), and a baidu_std connection is then closed.
// Handlers see what VerifyCredential() filled in on Controller::auth_context().

#include <string>
#include <string_view>

namespace arenarpc {

// Who the client is, as the server's Authenticator decided (brpc's AuthContext).
class AuthContext {
 public:
  const std::string& user() const noexcept { return user_; }
  void set_user(std::string user) { user_ = std::move(user); }
  const std::string& group() const noexcept { return group_; }
  void set_group(std::string group) { group_ = std::move(group); }
  const std::string& roles() const noexcept { return roles_; }
  void set_roles(std::string roles) { roles_ = std::move(roles); }
  const std::string& starter() const noexcept { return starter_; }
  void set_starter(std::string starter) { starter_ = std::move(starter); }
  bool is_service() const noexcept { return is_service_; }
  void set_is_service(bool is_service) noexcept { is_service_ = is_service; }

 private:
  std::string user_, group_, roles_, starter_;
  bool is_service_ = false;
};

class Authenticator {
 public:
  virtual ~Authenticator() = default;
  // Client: the credential to send. 0 = ok; otherwise the call fails with ERPCAUTH. Called once
  // per call attempt, from the calling thread or a channel thread (must be thread-safe).
  virtual int GenerateCredential(std::string* auth_str) const = 0;
  // Server: 0 = `auth_str` is valid (fill `out_ctx` as you like); anything else refuses it.
  // `client_addr` is the peer's "ip:port". Called from the server's I/O threads, concurrently.
  virtual int VerifyCredential(const std::string& auth_str, std::string_view client_addr,
                               AuthContext* out_ctx) const = 0;
};

}  // namespace arenarpc
