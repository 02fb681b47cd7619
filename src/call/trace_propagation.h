#pragma once
// How a call's trace context travels inside the process: a server handler's context becomes its
// fiber's current one; a client call without one of its own takes a child of the current one.
// The protocols read and write it on the wire (trace_headers.h for HTTP and gRPC).

#include "arenarpc/controller.h"
#include "arenarpc/trace_context.h"

namespace arenarpc::internal {

// On the handler's fiber, before the handler runs: `context` is current until the fiber ends.
void SetHandlerTrace(const TraceContext& context);

// A client call about to be packed: a Controller without a trace continues the current one.
inline void InheritTrace(Controller& controller) {
  if (controller.trace().valid()) return;
  if (const TraceContext* current = CurrentTrace()) controller.set_trace(current->Child());
}

}  // namespace arenarpc::internal
