#pragma once
// Runs a list of interceptors (arenarpc/interceptor.h) in order: the first refusal wins. What the
// server and the client share: the refusal's code and text, and what an exception means.

#include <memory>
#include <span>
#include <string>

#include "arenarpc/interceptor.h"

namespace arenarpc::internal {

using ServerInterceptorList = std::span<const std::shared_ptr<const ServerInterceptor>>;
using ClientInterceptorList = std::span<const std::shared_ptr<const ClientInterceptor>>;

// 0: every interceptor let the call go on. Else the refusal's code (> 0) and *error_text.
int RunServerInterceptors(ServerInterceptorList interceptors, const InterceptedServerCall& call,
                          std::string* error_text);
int RunBeforeSend(ClientInterceptorList interceptors, const InterceptedClientCall& call,
                  std::string* credential, std::string* error_text);
// Every interceptor's AfterReceive, last first; exceptions are swallowed.
void RunAfterReceive(ClientInterceptorList interceptors,
                     const google::protobuf::MethodDescriptor& method, Controller& controller,
                     const google::protobuf::Message& response) noexcept;

}  // namespace arenarpc::internal
