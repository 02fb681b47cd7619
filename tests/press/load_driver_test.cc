// The load generator's engine against in-process fake transports: open-loop schedule math, no
// coordinated omission, closed-loop concurrency, error accounting and echo verification.
#include "press/load_driver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "press/open_loop_schedule.h"
#include "press/press_result.h"

namespace arenarpc::press {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

TEST(OpenLoopSchedule, DueTimesAreEvenlySpacedFromStart) {
  const auto start = Clock::now();
  const OpenLoopSchedule s(start, 800);
  EXPECT_EQ(s.DueTime(0), start);
  EXPECT_EQ(s.DueTime(800) - start, std::chrono::seconds(1));
  EXPECT_EQ(s.DueTime(1) - start, std::chrono::microseconds(1250));
  EXPECT_EQ(s.CallsBefore(start), 0u);
  EXPECT_EQ(s.CallsBefore(start + 1s), 800u);         // calls 0..799
  EXPECT_EQ(s.CallsBefore(start + 1s + 1ns), 801u);   // call 800 is due exactly at 1 s
  EXPECT_EQ(s.CallsBefore(start + 10s), 8000u);
}

TEST(OpenLoopSchedule, LatencyIsFromTheDueTimeNotFromTheSend) {
  const auto due = Clock::now();
  // A call due at t, sent 30 ms late and answered 1 ms after it left, took 31 ms.
  const auto sent = due + 30ms, done = sent + 1ms;
  EXPECT_EQ(OpenLoopSchedule::LatencyUs(due, done), 31000);
  EXPECT_EQ(OpenLoopSchedule::LatencyUs(due, due - 5us), 0);  // clock skew never negative
}

// Answers every call after `delay` on its own thread, echoing the payload (or failing calls whose
// index hits `fail_every`, or corrupting them when `corrupt` is set). Optionally stalls the caller
// inside Send() once, like a blocked socket.
class FakeTransport final : public Transport {
 public:
  std::chrono::microseconds delay{200};
  int fail_every = 0;
  bool corrupt = false;
  uint64_t stall_at_call = UINT64_MAX;
  std::chrono::milliseconds stall{0};

  FakeTransport() : worker_([this] { Loop(); }) {}
  ~FakeTransport() override {
    {
      std::lock_guard lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  bool Init(const TransportOptions&, std::string*) override { return true; }
  void Send(const PressRequest& request, DoneCallback done) override {
    const uint64_t n = sent_.fetch_add(1);
    if (n == stall_at_call) std::this_thread::sleep_for(stall);
    std::lock_guard lock(mu_);
    queue_.push_back({Clock::now() + delay, &request.echo, std::move(done), n});
    in_flight_max_ = std::max<int64_t>(in_flight_max_, int64_t(queue_.size()));
    cv_.notify_all();
  }
  void Drain() override {
    std::unique_lock lock(mu_);
    drained_.wait(lock, [this] { return queue_.empty() && !running_; });
  }
  int64_t in_flight_max() {
    std::lock_guard lock(mu_);
    return in_flight_max_;
  }
  uint64_t sent() const { return sent_.load(); }

 private:
  struct Pending {
    Clock::time_point at;
    const RawEchoRequest* request;
    DoneCallback done;
    uint64_t index;
  };
  void Loop() {
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return quit_ || !queue_.empty(); });
      if (quit_ && queue_.empty()) return;
      Pending p = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
      lock.unlock();
      std::this_thread::sleep_until(p.at);
      CallResult result;
      std::string corrupted;
      if (fail_every > 0 && p.index % uint64_t(fail_every) == 0) {
        result.error_code = 1008;
        result.error_text = "fake timeout";
      } else if (corrupt) {
        corrupted = p.request->payload() + "x";
        result.response_payload = corrupted;
      } else {
        result.response_payload = p.request->payload();
      }
      p.done(result);
      lock.lock();
      running_ = false;
      if (queue_.empty()) drained_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_, drained_;
  std::deque<Pending> queue_;
  bool quit_ = false, running_ = false;
  int64_t in_flight_max_ = 0;
  std::atomic<uint64_t> sent_{0};
  std::thread worker_;
};

PressOptions OpenLoop(double qps, double duration_s) {
  PressOptions o;
  o.qps = qps;
  o.warmup_s = 0.2;
  o.duration_s = duration_s;
  o.payload_scale = 2;
  o.ring = 8;
  o.live = false;
  return o;
}

TEST(LoadDriver, OpenLoopKeepsTheRateAndMeasuresTheWindowOnly) {
  FakeTransport transport;
  const PressOptions o = OpenLoop(500, 1.0);
  RequestSource requests(o.payload_scale, o.ring, 1);
  const PressResult r = LoadDriver(o, transport, requests).Run(nullptr);
  // 0.2 s warm-up + 1 s window at 500 QPS: 600 calls sent, the window's 500 measured.
  EXPECT_EQ(transport.sent(), 600u);
  EXPECT_EQ(r.calls_ok, 500u);
  EXPECT_EQ(r.calls_failed, 0u);
  EXPECT_DOUBLE_EQ(r.achieved_qps, 500.0);
  EXPECT_EQ(r.latency.Count(), 500u);
  EXPECT_GE(r.latency.Percentile(50), 200);  // the fake's 200 µs service time at least
  EXPECT_GT(r.mean_request_bytes, 0);
  EXPECT_TRUE(r.client.valid);
}

TEST(LoadDriver, OpenLoopChargesAStallToEveryCallItDelayed) {
  // The sender is stuck 200 ms inside one Send(): at 1000 QPS ~200 calls are sent late. Timed from
  // their scheduled time they show the stall (p90 well above it); timed from the actual send (the
  // coordinated-omission mistake) they would all look like 200 µs.
  FakeTransport transport;
  transport.stall_at_call = 500;  // inside the measured window (warm-up is 200 calls)
  transport.stall = 200ms;
  const PressOptions o = OpenLoop(1000, 1.0);
  RequestSource requests(o.payload_scale, o.ring, 1);
  const PressResult r = LoadDriver(o, transport, requests).Run(nullptr);
  EXPECT_EQ(r.calls_ok, 1000u);
  EXPECT_GE(r.latency.Max(), 190'000);
  EXPECT_GE(r.latency.Percentile(90), 50'000);
  EXPECT_LT(r.latency.Percentile(50), 50'000);
  EXPECT_GE(r.send_lag.Max(), 190'000);
}

TEST(LoadDriver, CountsErrorsByCodeAndVerifiesEchoes) {
  {
    FakeTransport transport;
    transport.fail_every = 4;
    const PressOptions o = OpenLoop(400, 0.5);
    RequestSource requests(o.payload_scale, o.ring, 1);
    const PressResult r = LoadDriver(o, transport, requests).Run(nullptr);
    EXPECT_EQ(r.calls_ok + r.calls_failed, 200u);
    EXPECT_EQ(r.calls_failed, 50u);
    ASSERT_EQ(r.errors_by_code.size(), 1u);
    EXPECT_EQ(r.errors_by_code.at(1008), 50u);
    EXPECT_EQ(r.error_samples.at(1008), "fake timeout");
    EXPECT_NE(FormatText(r).find("ERPCTIMEDOUT: 50"), std::string::npos) << FormatText(r);
  }
  {
    FakeTransport transport;
    transport.corrupt = true;
    const PressOptions o = OpenLoop(200, 0.5);
    RequestSource requests(o.payload_scale, o.ring, 1);
    const PressResult r = LoadDriver(o, transport, requests).Run(nullptr);
    EXPECT_EQ(r.calls_ok, 0u);
    EXPECT_EQ(r.errors_by_code.at(kEchoMismatch), 100u);
  }
}

TEST(LoadDriver, ClosedLoopKeepsExactlyNCallsInFlight) {
  FakeTransport transport;
  transport.delay = 1000us;
  PressOptions o = OpenLoop(0, 0.5);
  o.concurrency = 4;
  RequestSource requests(o.payload_scale, 0, 1);  // drawn per call
  const PressResult r = LoadDriver(o, transport, requests).Run(nullptr);
  EXPECT_EQ(transport.in_flight_max(), 4);
  // 4 calls per ~1 ms at most: never more than 4000 QPS (a loaded machine gets less; how much
  // less is the machine's business, not this test's). The rate is what was counted.
  EXPECT_GT(r.calls_ok, 0u);
  EXPECT_NEAR(r.achieved_qps, static_cast<double>(r.calls_ok) / r.measured_seconds, 1e-6);
  EXPECT_LT(r.achieved_qps, 4000 * 1.05);
  EXPECT_EQ(r.calls_failed, 0u);
  EXPECT_GE(r.latency.Percentile(50), 1000);
}

TEST(LoadDriver, ReportsRenderEveryFigure) {
  FakeTransport transport;
  PressOptions o = OpenLoop(100, 0.3);
  RequestSource requests(o.payload_scale, o.ring, 1);
  const PressResult r = LoadDriver(o, transport, requests).Run(nullptr);
  const std::string text = FormatText(r), json = FormatJson(r);
  for (const char* key : {"p50=", "p80=", "p90=", "p99=", "p99.9=", "max=", "achieved QPS"}) {
    EXPECT_NE(text.find(key), std::string::npos) << key;
  }
  for (const char* key : {"\"p99.9\":", "\"achieved_qps\":100,", "\"errors\":[]", "\"client_usage\":"}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << " in " << json;
  }
  EXPECT_EQ(json.find("server_usage"), std::string::npos);  // no --server_pid given
}

}  // namespace
}  // namespace arenarpc::press
