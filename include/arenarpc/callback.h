#pragma once
// NewCallback / NewPermanentCallback with any number of bound arguments (protobuf's stop at two;
// brpc's brpc::NewCallback takes more). A closure from NewCallback deletes itself after its one
// Run(); one from NewPermanentCallback may run many times and is deleted by its owner.
//
//   void OnEcho(arenarpc::Controller* cntl, EchoResponse* response, int tag);
//   stub.Echo(cntl, &request, response, arenarpc::NewCallback(&OnEcho, cntl, response, 7));
//   done = arenarpc::NewCallback(this, &Client::OnEcho, cntl, response);   // member function
//
// Arguments are stored by value (decayed) and passed to the function when the closure runs.

#include <google/protobuf/stubs/callback.h>

#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace arenarpc {
namespace callback_internal {

// Calls `fn` (anything std::invoke accepts) with the stored arguments; deletes itself after the
// run if it is a one-shot closure.
template <bool kSelfDeleting, typename Fn, typename... Stored>
class BoundClosure final : public google::protobuf::Closure {
 public:
  template <typename F, typename... A>
  explicit BoundClosure(F&& fn, A&&... args)
      : fn_(std::forward<F>(fn)), args_(std::forward<A>(args)...) {}

  void Run() override {
    if constexpr (kSelfDeleting) {
      std::unique_ptr<BoundClosure> self(this);  // deleted even if the function throws
      std::apply(fn_, args_);
    } else {
      std::apply(fn_, args_);
    }
  }

 private:
  Fn fn_;
  std::tuple<Stored...> args_;
};

template <bool kSelfDeleting, typename Fn, typename... Args>
google::protobuf::Closure* Make(Fn&& fn, Args&&... args) {
  using Closure = BoundClosure<kSelfDeleting, std::decay_t<Fn>, std::decay_t<Args>...>;
  // The one place that allocates a closure with new: protobuf's ownership contract for done.
  return new Closure(std::forward<Fn>(fn), std::forward<Args>(args)...);
}

template <typename Class, typename Method>
auto BindObject(Class* object, Method method) {
  return [object, method](auto&&... args) {
    return std::invoke(method, object, std::forward<decltype(args)>(args)...);
  };
}

}  // namespace callback_internal

// Free functions.
template <typename... Params, typename... Args>
  requires std::is_invocable_v<void (*)(Params...), std::decay_t<Args>&...>
google::protobuf::Closure* NewCallback(void (*function)(Params...), Args&&... args) {
  return callback_internal::Make<true>(function, std::forward<Args>(args)...);
}
template <typename... Params, typename... Args>
  requires std::is_invocable_v<void (*)(Params...), std::decay_t<Args>&...>
google::protobuf::Closure* NewPermanentCallback(void (*function)(Params...), Args&&... args) {
  return callback_internal::Make<false>(function, std::forward<Args>(args)...);
}

// Member functions (const or not) of `object`, which must outlive the closure's runs.
template <typename Class, typename Method, typename... Args>
  requires std::is_member_function_pointer_v<Method> &&
           std::is_invocable_v<Method, Class*, std::decay_t<Args>&...>
google::protobuf::Closure* NewCallback(Class* object, Method method, Args&&... args) {
  return callback_internal::Make<true>(callback_internal::BindObject(object, method),
                                       std::forward<Args>(args)...);
}
template <typename Class, typename Method, typename... Args>
  requires std::is_member_function_pointer_v<Method> &&
           std::is_invocable_v<Method, Class*, std::decay_t<Args>&...>
google::protobuf::Closure* NewPermanentCallback(Class* object, Method method, Args&&... args) {
  return callback_internal::Make<false>(callback_internal::BindObject(object, method),
                                        std::forward<Args>(args)...);
}

// brpc's DoNothing(): a shared done that does nothing and is never deleted, for an asynchronous
// call that is waited for with Join(cntl.call_id()) ("semi-synchronous").
inline google::protobuf::Closure* DoNothing() {
  struct Nothing final : google::protobuf::Closure {
    void Run() override {}
  };
  static Nothing nothing;
  return &nothing;
}

}  // namespace arenarpc
