#include "call/interceptor_chain.h"

#include <exception>

#include "arenarpc/error_codes.h"

namespace arenarpc::internal {
namespace {

// Calls `intercept(interceptor)` for each in order until one refuses (non-zero) or throws: the
// refusal's code as the caller gets it (a negative one: EREJECT) and its text.
template <typename List, typename Intercept>
int RunInOrder(List interceptors, std::string* error_text, Intercept intercept) {
  for (const auto& interceptor : interceptors) {
    try {
      if (const int code = intercept(*interceptor); code != 0) {
        if (error_text->empty()) *error_text = "Rejected by interceptor";
        return code < 0 ? EREJECT : code;
      }
    } catch (const std::exception& e) {
      *error_text = std::string("Interceptor threw: ") + e.what();
      return EINTERNAL;
    } catch (...) {
      *error_text = "Interceptor threw";
      return EINTERNAL;
    }
    error_text->clear();  // text left by an interceptor that let the call go on
  }
  return 0;
}

}  // namespace

int RunServerInterceptors(ServerInterceptorList interceptors, const InterceptedServerCall& call,
                          std::string* error_text) {
  return RunInOrder(interceptors, error_text, [&](const ServerInterceptor& interceptor) {
    return interceptor.Intercept(call, error_text);
  });
}

int RunBeforeSend(ClientInterceptorList interceptors, const InterceptedClientCall& call,
                  std::string* credential, std::string* error_text) {
  return RunInOrder(interceptors, error_text, [&](const ClientInterceptor& interceptor) {
    return interceptor.BeforeSend(call, credential, error_text);
  });
}

void RunAfterReceive(ClientInterceptorList interceptors,
                     const google::protobuf::MethodDescriptor& method, Controller& controller,
                     const google::protobuf::Message& response) noexcept {
  for (auto it = interceptors.rbegin(); it != interceptors.rend(); ++it) {
    try {
      (*it)->AfterReceive(method, controller, response);
    } catch (...) {  // the call's outcome is already decided; nothing to report it to
    }
  }
}

}  // namespace arenarpc::internal
