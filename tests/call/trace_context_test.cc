#include "arenarpc/trace_context.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "arenarpc/controller.h"
#include "arenarpc/fiber.h"
#include "call/trace_headers.h"
#include "call/trace_propagation.h"
#include "fiber_runtime.h"

namespace arenarpc {
namespace {

constexpr char kExample[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(Traceparent, ParsesW3csExampleAsTheReceiversContext) {
  const std::optional<TraceContext> context = ParseTraceparent(kExample);
  ASSERT_TRUE(context.has_value());
  EXPECT_EQ(0x4bf92f3577b34da6u, context->trace_id_high);
  EXPECT_EQ(0xa3ce929d0e0e4736u, context->trace_id);
  EXPECT_EQ(0x00f067aa0ba902b7u, context->parent_span_id);  // the sender's span
  EXPECT_NE(0u, context->span_id);                          // the receiver's own, new
  EXPECT_NE(context->parent_span_id, context->span_id);
  EXPECT_EQ(1, context->flags);
  // What the receiver sends on: its own span as the parent-id.
  TraceContext sender = *context;
  sender.span_id = 0x00f067aa0ba902b7u;
  EXPECT_EQ(kExample, FormatTraceparent(sender));
}

TEST(Traceparent, RefusesWhatW3cCallsInvalid) {
  for (const char* bad : {
           "",                                                            // empty
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",      // short
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",     // upper case
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",     // zero trace-id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",     // zero parent-id
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     // version ff
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xx",  // v00 with more
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     // separator
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",     // not hex
       }) {
    EXPECT_FALSE(ParseTraceparent(bad).has_value()) << bad;
  }
  // A later version may carry more fields.
  EXPECT_TRUE(ParseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-abc"));
}

TEST(TraceHeaders, W3cFirstThenBrpcsHttpHeadersAndNothingFromGarbage) {
  internal::TraceHeaderReader reader;
  reader.Offer("content-type", "application/json");
  reader.Offer("traceparent", kExample);
  reader.Offer("tracestate", "congo=t61rcWkgMzE");
  reader.Offer("x-bd-trace-id", "7");  // W3C wins
  TraceContext context = reader.Take();
  EXPECT_EQ(0xa3ce929d0e0e4736u, context.trace_id);
  EXPECT_EQ("congo=t61rcWkgMzE", context.tracestate);

  reader.Offer("x-bd-trace-id", "123");
  reader.Offer("x-bd-span-id", "456");
  reader.Offer("x-bd-parent-span-id", "789");
  context = reader.Take();
  EXPECT_EQ(123u, context.trace_id);
  EXPECT_EQ(0u, context.trace_id_high);
  EXPECT_EQ(456u, context.span_id);  // shared with the sender, as on baidu_std
  EXPECT_EQ(789u, context.parent_span_id);

  reader.Offer("traceparent", "garbage");
  EXPECT_FALSE(reader.Take().valid());
  reader.Offer("x-bd-trace-id", "-1");
  EXPECT_FALSE(reader.Take().valid());
  EXPECT_FALSE(reader.Take().valid());  // Take() forgets what was offered
}

TEST(TraceHeaders, ACallSendsItsOwnSpanAsTheParentAndNothingWithoutATrace) {
  std::vector<std::pair<std::string, std::string>> fields;
  internal::AppendTraceHeaders(TraceContext(), &fields);
  EXPECT_TRUE(fields.empty());
  TraceContext context = TraceContext::NewRoot();
  context.tracestate = "a=b";
  internal::AppendTraceHeaders(context, &fields);
  ASSERT_EQ(2u, fields.size());
  EXPECT_EQ("traceparent", fields[0].first);
  internal::TraceHeaderReader reader;
  reader.Offer(fields[0].first, fields[0].second);
  reader.Offer(fields[1].first, fields[1].second);
  const TraceContext received = reader.Take();
  EXPECT_EQ(context.trace_id_high, received.trace_id_high);
  EXPECT_EQ(context.trace_id, received.trace_id);
  EXPECT_EQ(context.span_id, received.parent_span_id);
  EXPECT_EQ("a=b", received.tracestate);
  EXPECT_EQ(1, received.flags);
}

TEST(CurrentTrace, AHandlersContextIsItsFibersAndAChildContinuesIt) {
  EXPECT_EQ(nullptr, CurrentTrace());
  const TraceContext handler = TraceContext::NewRoot();
  std::vector<TraceContext> seen(2);
  {
    fiber::Runtime runtime(2);
    ASSERT_TRUE(runtime.Spawn([&] {
      internal::SetHandlerTrace(handler);
      fiber::SleepFor(std::chrono::milliseconds(5));  // may resume on another thread
      Controller call;
      internal::InheritTrace(call);
      seen[0] = call.trace();
    }));
    ASSERT_TRUE(runtime.Spawn([&] {  // another fiber has no context
      fiber::SleepFor(std::chrono::milliseconds(1));
      Controller call;
      internal::InheritTrace(call);
      seen[1] = call.trace();
    }));
  }  // waits for both fibers
  EXPECT_EQ(handler.trace_id, seen[0].trace_id);
  EXPECT_EQ(handler.trace_id_high, seen[0].trace_id_high);
  EXPECT_EQ(handler.span_id, seen[0].parent_span_id);
  EXPECT_NE(handler.span_id, seen[0].span_id);
  EXPECT_FALSE(seen[1].valid());
  EXPECT_EQ(nullptr, CurrentTrace());  // nothing leaked to this thread
}

TEST(CurrentTrace, ScopedTraceOnAThreadRestoresThePreviousAndAnExplicitTraceWins) {
  const TraceContext outer = TraceContext::NewRoot();
  std::thread([&] {
    ScopedTrace scope(outer);
    {
      const TraceContext inner = TraceContext::NewRoot();
      ScopedTrace nested(inner);
      EXPECT_EQ(inner.trace_id, CurrentTrace()->trace_id);
    }
    ASSERT_NE(nullptr, CurrentTrace());
    EXPECT_EQ(outer.trace_id, CurrentTrace()->trace_id);
    Controller explicit_trace;
    explicit_trace.set_trace(1, 2, 3);
    internal::InheritTrace(explicit_trace);
    EXPECT_EQ(1, explicit_trace.trace_id());
    EXPECT_EQ(2, explicit_trace.span_id());
  }).join();
  EXPECT_EQ(nullptr, CurrentTrace());
}

}  // namespace
}  // namespace arenarpc
