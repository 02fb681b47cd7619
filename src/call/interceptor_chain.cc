#include "call/interceptor_chain.h"

#include <exception>

#include "arenarpc/error_codes.h"

namespace arenarpc::internal {
namespace {

// A refusal's code as the caller gets it: the interceptor's, EREJECT for a negative one.
int Refusal(int code, std::string* error_text) {
  if (error_text->empty()) *error_text = "Rejected by interceptor";
  return code < 0 ? EREJECT : code;
}

int Thrown(std::string* error_text) {
  try {
    throw;
  } catch (const std::exception& e) {
    *error_text = std::string("Interceptor threw: ") + e.what();
  } catch (...) {
    *error_text = "Interceptor threw";
  }
  return EINTERNAL;
}

}  // namespace

int RunServerInterceptors(ServerInterceptorList interceptors, const InterceptedServerCall& call,
                          std::string* error_text) {
  for (const auto& interceptor : interceptors) {
    try {
      if (const int code = interceptor->Intercept(call, error_text); code != 0) {
        return Refusal(code, error_text);
      }
    } catch (...) {
      return Thrown(error_text);
    }
    error_text->clear();  // text left by an interceptor that let the call go on
  }
  return 0;
}

int RunBeforeSend(ClientInterceptorList interceptors, const InterceptedClientCall& call,
                  std::string* credential, std::string* error_text) {
  for (const auto& interceptor : interceptors) {
    try {
      if (const int code = interceptor->BeforeSend(call, credential, error_text); code != 0) {
        return Refusal(code, error_text);
      }
    } catch (...) {
      return Thrown(error_text);
    }
    error_text->clear();
  }
  return 0;
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
