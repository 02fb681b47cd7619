#pragma once
// RetryPolicy: decides whether a failed attempt of a call is tried again (on another server in a
// cluster channel), within ChannelOptions::max_retry and the call's deadline. Timeouts and
// cancellations are never retried. Set ChannelOptions::retry_policy (not owned; it must outlive
// the channel) to retry more than the default does, e.g. idempotent calls whose request was sent.

#include <string_view>

namespace arenarpc {

struct RetryContext {
  int error_code = 0;           // the attempt's failure (errno, EFAILEDSOCKET, a server's code)
  std::string_view error_text;
  bool request_sent = false;    // the whole request reached the kernel: the server may have run it
  bool server_replied = false;  // the failure is a server's error reply (error_code is its code)
  bool cluster = false;         // the channel has a naming service and a load balancer
  int retries_so_far = 0;
};

class RetryPolicy {
 public:
  virtual ~RetryPolicy() = default;
  virtual bool DoRetry(const RetryContext& context) const = 0;
};

// What a channel without a policy does (at-most-once): retry a request that was not sent (but
// EOVERCROWDED, a connection's full queue, only in a cluster channel); in a cluster channel also
// one a server refused before running it (ELOGOFF: the server is stopping; ELIMIT: over its
// concurrency limit), since another server can take it.
bool DefaultDoRetry(const RetryContext& context) noexcept;

}  // namespace arenarpc
