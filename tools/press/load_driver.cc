#include "press/load_driver.h"

#include <unistd.h>

#include <iomanip>
#include <ostream>
#include <sstream>
#include <thread>

#include "press/open_loop_schedule.h"

namespace arenarpc::press {
namespace {

// > 0 while this thread is inside Transport::Send(): a completion seen then ran inline.
thread_local int send_depth = 0;

// Sleeps most of the way, then spins: nanosleep alone wakes ~50-100 µs late, which would be
// charged to every call's latency.
void WaitUntil(std::chrono::steady_clock::time_point t, const std::atomic<bool>& stop) {
  using namespace std::chrono_literals;
  while (!stop.load(std::memory_order_relaxed)) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= t) return;
    const auto left = t - now;
    if (left > 1ms) {
      std::this_thread::sleep_for(left - 200us);
    } else if (left > 120us) {
      std::this_thread::sleep_for(left - 100us);
    }  // else spin
  }
}

}  // namespace

LoadDriver::LoadDriver(const PressOptions& options, Transport& transport, RequestSource& requests)
    : options_(options),
      transport_(transport),
      requests_(requests),
      check_(options.verify ? ResponseCheck::Echo() : ResponseCheck::None()) {}

void LoadDriver::RecordError(int code, std::string_view text, bool measured) {
  failed_total_.fetch_add(1, std::memory_order_relaxed);
  if (!measured) return;
  failed_in_window_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(errors_mu_);
  ++result_.errors_by_code[code];
  result_.error_samples.try_emplace(code, text);
}

void LoadDriver::Issue(Clock::time_point due, bool from_schedule, int slot) {
  const bool measured = InWindow(due);
  if (from_schedule &&
      in_flight_.load(std::memory_order_relaxed) >= options_.max_inflight) {
    RecordError(kSkippedInflight, "press: --max_inflight calls already pending, call skipped",
                measured);
    return;
  }
  if (from_schedule && measured) {
    result_.send_lag.Record(OpenLoopSchedule::LatencyUs(due, Clock::now()));
  }
  auto request = requests_.Next();
  const PressRequest& ref = *request;
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  ++send_depth;
  transport_.Send(ref, [this, request = std::move(request), due, slot](const CallResult& call) {
    Complete(*request, due, slot, call);
  });
  --send_depth;
}

void LoadDriver::Complete(const PressRequest& request, Clock::time_point due, int slot,
                          const CallResult& call) {
  const auto now = Clock::now();
  const bool measured = InWindow(due);
  int code = call.error_code;
  std::string_view text = call.error_text;
  std::string check_text;
  if (code == 0) {
    code = check_.Check(request, call, &check_text);
    if (code != 0) text = check_text;
  }
  if (code == 0) {
    const int64_t us = OpenLoopSchedule::LatencyUs(due, now);
    so_far_.Record(us);
    completed_total_.fetch_add(1, std::memory_order_relaxed);
    if (measured) {
      result_.latency.Record(us);
      ok_in_window_.fetch_add(1, std::memory_order_relaxed);
    }
  } else {
    if (measured) result_.failed_latency.Record(OpenLoopSchedule::LatencyUs(due, now));
    RecordError(code, text, measured);
  }
  if (slot >= 0 && !stop_sending_.load(std::memory_order_relaxed) && now < window_end_) {
    if (send_depth > 0) {  // completed inside Send(): resending here would recurse without bound
      std::lock_guard lock(resend_mu_);
      resend_.push_back(slot);
    } else {
      Issue(Clock::now(), false, slot);
    }
  }
  in_flight_.fetch_sub(1, std::memory_order_release);  // last touch of *this for this call
}

void LoadDriver::RunOpenLoopSender(int thread_index, Clock::time_point start) {
  const OpenLoopSchedule schedule(start, options_.qps);
  for (uint64_t n = static_cast<uint64_t>(thread_index);; n += static_cast<uint64_t>(options_.threads)) {
    const auto due = schedule.DueTime(n);
    if (due >= window_end_) return;
    WaitUntil(due, stop_sending_);
    if (stop_sending_.load(std::memory_order_relaxed)) return;
    Issue(due, true, -1);
  }
}

void LoadDriver::LiveLoop(std::ostream* live, Clock::time_point start) {
  uint64_t last_completed = 0, last_failed = 0;
  for (int second = 1; !stop_sending_.load(std::memory_order_relaxed); ++second) {
    WaitUntil(start + std::chrono::seconds(second), stop_sending_);
    if (stop_sending_.load(std::memory_order_relaxed)) return;
    const uint64_t completed = completed_total_.load(std::memory_order_relaxed);
    const uint64_t failed = failed_total_.load(std::memory_order_relaxed);
    const auto now = Clock::now();
    std::ostringstream line;
    line << "[press] " << second << "s " << (now < window_start_ ? "warmup " : "measure ")
         << "qps=" << (completed - last_completed) << " errors=" << (failed - last_failed)
         << " p50=" << so_far_.Percentile(50) << "us p99=" << so_far_.Percentile(99)
         << "us inflight=" << in_flight_.load(std::memory_order_relaxed) << '\n';
    *live << line.str() << std::flush;
    last_completed = completed, last_failed = failed;
  }
}

PressResult LoadDriver::Run(std::ostream* live) {
  using namespace std::chrono;
  result_.options = options_;
  result_.mean_request_bytes = requests_.mean_request_bytes();
  const auto start = Clock::now() + milliseconds(5);
  window_start_ = start + duration_cast<Clock::duration>(duration<double>(options_.warmup_s));
  window_end_ = window_start_ + duration_cast<Clock::duration>(duration<double>(options_.duration_s));

  std::vector<std::thread> senders;
  if (options_.qps > 0) {
    for (int k = 0; k < options_.threads; ++k) {
      senders.emplace_back([this, k, start] { RunOpenLoopSender(k, start); });
    }
  }
  std::thread live_thread;
  if (live != nullptr) live_thread = std::thread([this, live, start] { LiveLoop(live, start); });

  const std::atomic<bool> never{false};
  WaitUntil(start, never);
  if (options_.concurrency > 0) {
    for (int slot = 0; slot < options_.concurrency; ++slot) Issue(Clock::now(), false, slot);
  }
  std::unique_ptr<ProcessSampler> server, client;
  bool window_started = false;
  while (Clock::now() < window_end_) {
    if (!window_started && Clock::now() >= window_start_) {
      window_started = true;
      so_far_.Reset();
      if (options_.server_pid > 0) {
        server = std::make_unique<ProcessSampler>(options_.server_pid);
        if (!server->Start()) server.reset();
      }
      client = std::make_unique<ProcessSampler>(static_cast<int>(getpid()));
      if (!client->Start()) client.reset();
      if (on_window_start_) on_window_start_();
    }
    std::vector<int> resend;
    {
      std::lock_guard lock(resend_mu_);
      resend.swap(resend_);
    }
    for (int slot : resend) Issue(Clock::now(), false, slot);
    std::this_thread::sleep_for(resend.empty() ? milliseconds(2) : milliseconds(0));
  }
  if (server) result_.server = server->Stop();
  if (client) result_.client = client->Stop();
  // Open-loop senders end on their own once every call due before window_end_ is issued; a
  // sender running late (loaded machine) still issues its remaining due calls, whose latency
  // counts from their due time. Only then is sending stopped (the live loop and resends read it).
  for (auto& t : senders) t.join();
  stop_sending_.store(true);
  if (live_thread.joinable()) live_thread.join();
  transport_.Drain();  // every callback has returned after this: nothing references *this
  while (in_flight_.load(std::memory_order_acquire) != 0) std::this_thread::yield();

  result_.measured_seconds = options_.duration_s;
  result_.calls_ok = ok_in_window_.load();
  result_.calls_failed = failed_in_window_.load();
  result_.achieved_qps = static_cast<double>(result_.calls_ok) / options_.duration_s;
  if (window_started && on_window_end_) on_window_end_(result_);
  return std::move(result_);
}

}  // namespace arenarpc::press
