#include "arenarpc/server.h"

#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/service.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>

#include "arenarpc/grpc_stream.h"
#include "builtin/builtin_services.h"
#include "capture/capture_settings.h"
#include "server/grpc_builtin_services.h"
#include "server/deprecated_server_options.h"
#include "server/memory_mode_override.h"
#include "cluster/server_registration.h"
#include "net/endpoint.h"
#include "protocol/http/http_request_decoder.h"
#include "server/server_access.h"
#include "server/server_connection.h"
#include "server/server_state.h"
#include "server/server_snapshot.h"
#include "server/settings_face.h"
#include "server/server_tls.h"

namespace arenarpc {

using server::ServerState;

class Server::Impl {
 public:
  enum class Phase { kIdle, kRunning, kStopped };

  std::shared_ptr<ServerState> state = std::make_shared<ServerState>();
  std::string last_error;
  int port = -1;
  int internal_port = -1;

  std::mutex mutex;  // guards phase, joined
  std::condition_variable stopped_cv;
  Phase phase = Phase::kIdle;
  bool joined = false;
  std::unique_ptr<cluster::ServerRegistration> registration;  // with options.registry_url

  int Fail(std::string message) {
    last_error = std::move(message);
    return -1;
  }

  // What Start() sets up beyond the runtime (registration, built-in pages); released again when
  // Start() returns without Commit().
  class Startup {
   public:
    explicit Startup(Impl& impl) : impl_(impl) {}
    ~Startup() {
      if (committed_) return;
      impl_.registration.reset();
      impl_.state->config.builtins = builtin::BuiltinRegistry();
    }
    Startup(const Startup&) = delete;
    Startup& operator=(const Startup&) = delete;
    void Commit() { committed_ = true; }

   private:
    Impl& impl_;
    bool committed_ = false;
  };
  int ValidateOptions(const ServerOptions& options);
  int BindMethods(const ServerOptions& options);
  void OnAccept(asio::ip::tcp::socket socket, bool internal_port);
};

namespace {

std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

constexpr size_t kMinFiberStackSize = 16u << 10;

// The runtime's clocks count int milliseconds; a negative timeout means never.
constexpr std::chrono::milliseconds kMaxTimeout{std::numeric_limits<int>::max()};
int TimeoutMs(std::chrono::milliseconds timeout) {
  return timeout.count() < 0 ? -1 : static_cast<int>(timeout.count());
}

}  // namespace

int Server::Impl::ValidateOptions(const ServerOptions& options) {
  if (options.num_threads < 0) {
    return Fail("num_threads=" + std::to_string(options.num_threads) +
                " is invalid (expected >= 0; 0 = one per CPU)");
  }
  if (options.worker_threads < 0) {
    return Fail("worker_threads=" + std::to_string(options.worker_threads) +
                " is invalid (expected >= 0; 0 = run handlers on the I/O threads)");
  }
  if (options.max_body_size == 0 || options.max_body_size > UINT32_MAX) {
    return Fail("max_body_size=" + std::to_string(options.max_body_size) +
                " is invalid (expected 1..4294967295: body_size is a 32-bit field)");
  }
  if (!options.max_concurrency.error().empty() || options.max_concurrency.fixed_limit() < 0) {
    return Fail("max_concurrency=" + options.max_concurrency.spec() + " is invalid (" +
                (options.max_concurrency.error().empty()
                     ? std::string("expected >= 0; 0 = unlimited")
                     : options.max_concurrency.error()) +
                ")");
  }
  if (!options.registry_url.empty()) {
    if (std::string error = cluster::ValidateRegistrationOptions(
            options.registry_lease_ttl, options.registry_weight, options.registry_tag);
        !error.empty()) {
      return Fail(error);
    }
  }
  if (std::ranges::find(options.interceptors, nullptr) != options.interceptors.end()) {
    return Fail("interceptors holds a null interceptor");
  }
  if (options.max_queued_requests < 0) {
    return Fail("max_queued_requests=" + std::to_string(options.max_queued_requests) +
                " is invalid (expected >= 0; 0 = unlimited)");
  }
  if (options.max_queued_requests_per_connection < 1) {
    return Fail("max_queued_requests_per_connection=" +
                std::to_string(options.max_queued_requests_per_connection) +
                " is invalid (expected >= 1)");
  }
  if (options.max_connections < 0) {
    return Fail("max_connections=" + std::to_string(options.max_connections) +
                " is invalid (expected >= 0; 0 = unlimited)");
  }
  if (options.max_unwritten_bytes == 0) {
    return Fail("max_unwritten_bytes=0 is invalid (expected > 0)");
  }
  if (options.max_queued_request_bytes == 0) {
    return Fail("max_queued_request_bytes=0 is invalid (expected > 0)");
  }
  for (const auto& [name, value, low, high] :
       {std::tuple<const char*, uint32_t, uint32_t, uint32_t>{
            "http2_stream_window", options.http2_stream_window, 1, 0x7fffffff},
        {"http2_connection_window", options.http2_connection_window, 65535, 0x7fffffff},
        {"http2_max_frame_size", options.http2_max_frame_size, 16384, 16777215},
        {"http2_max_window", options.http2_max_window == 0 ? 65535 : options.http2_max_window,
         65535, 0x7fffffff}}) {
    if (value < low || value > high) {
      return Fail(std::string(name) + "=" + std::to_string(value) + " is invalid (expected " +
                  std::to_string(low) + ".." + std::to_string(high) + ")");
    }
  }
  for (const auto& [name, value] :
       {std::pair<const char*, std::chrono::milliseconds>{"read_timeout", options.read_timeout},
        {"first_byte_timeout", options.first_byte_timeout},
        {"write_timeout", options.write_timeout},
        {"stream_idle_timeout", options.stream_idle_timeout}}) {
    if (value.count() == 0 || value > kMaxTimeout) {
      return Fail(std::string(name) + "=" + std::to_string(value.count()) +
                  "ms is invalid (expected 1 ms .. 2147483647 ms, or negative = never)");
    }
  }
  if (options.idle_timeout_sec == 0 || options.idle_timeout_sec < -1) {
    return Fail("idle_timeout_sec=" + std::to_string(options.idle_timeout_sec) +
                " is invalid (expected -1 = never, or > 0)");
  }
  if (options.max_http_header_size == 0 ||
      options.max_http_header_size > protocol::HttpRequestDecoder::kParserMaxHeaderSize) {
    return Fail("max_http_header_size=" + std::to_string(options.max_http_header_size) +
                " is invalid (expected 1.." +
                std::to_string(protocol::HttpRequestDecoder::kParserMaxHeaderSize) +
                ", the HTTP parser's own bound)");
  }
  if (options.internal_port < -1 || options.internal_port > 65535) {
    return Fail("internal_port=" + std::to_string(options.internal_port) +
                " is invalid (expected -1 = none, or 0..65535)");
  }
  if (options.internal_port >= 0) {
    asio::error_code error;
    asio::ip::make_address(options.internal_address, error);
    if (error) {
      return Fail("internal_address=" + Quoted(options.internal_address) +
                  " is invalid (expected an IP address, e.g. 127.0.0.1): " + error.message());
    }
  }
  if (options.main_port_pages != MainPortPages::kAll &&
      options.main_port_pages != MainPortPages::kHealth &&
      options.main_port_pages != MainPortPages::kNone) {
    return Fail("main_port_pages=" + std::to_string(static_cast<int>(options.main_port_pages)) +
                " is not a MainPortPages value");
  }
  if (options.max_fibers < 1) {
    return Fail("max_fibers=" + std::to_string(options.max_fibers) + " is invalid (expected >= 1)");
  }
  for (const auto& [name, value] : {std::pair{"max_fibers_per_connection",
                                               options.max_fibers_per_connection},
                                     std::pair{"max_streaming_fibers",
                                               options.max_streaming_fibers}}) {
    if (value < 0 || value > options.max_fibers) {
      return Fail(std::string(name) + "=" + std::to_string(value) +
                  " is invalid (expected 0..max_fibers=" + std::to_string(options.max_fibers) +
                  ")");
    }
  }
  if (options.max_streaming_calls_per_connection < 1) {
    return Fail("max_streaming_calls_per_connection=" +
                std::to_string(options.max_streaming_calls_per_connection) +
                " is invalid (expected >= 1)");
  }
  if (options.fiber_stack_size < kMinFiberStackSize) {
    return Fail("fiber_stack_size=" + std::to_string(options.fiber_stack_size) +
                " is invalid (expected >= " + std::to_string(kMinFiberStackSize) + ")");
  }
  if (options.stop_deadline.count() < 0 || options.stop_deadline > kMaxTimeout) {
    return Fail("stop_deadline=" + std::to_string(options.stop_deadline.count()) +
                "ms is invalid (expected 0 .. 2147483647 ms)");
  }
  if (std::string error; memory::ValidateMemoryOptions(options.memory, &error) != 0) {
    return Fail("memory options are invalid: " + error);
  }
  auto check_method = [&](std::string_view option, const std::string& method) {
    if (state->config.registry.FindMethod(method) != nullptr) return 0;
    std::string known;
    for (const auto& entry : state->config.registry.methods()) {
      known += (known.empty() ? "" : ", ") + entry->full_name;
    }
    return Fail(std::string(option) + ": no method " + Quoted(method) +
                " is registered (expected pkg.Service.Method, one of: " + known + ")");
  };
  for (const auto& [method, mode] : options.method_memory_mode) {
    if (check_method("method_memory_mode", method) != 0) return -1;
  }
  for (const auto& [method, strategy] : options.method_memory_strategy) {
    if (check_method("method_memory_strategy", method) != 0) return -1;
    if (strategy == nullptr) return Fail("method_memory_strategy[" + method + "] is null");
    if (options.method_memory_mode.count(method) != 0) {
      return Fail("method_memory_strategy[" + method + "] and method_memory_mode[" + method +
                  "] are both set (give one)");
    }
  }
  return 0;
}

int Server::Impl::BindMethods(const ServerOptions& options) {
  auto strategy_for = [&](const std::string& mode,
                          const std::string& where) -> std::shared_ptr<memory::MessageMemory> {
    auto& strategy = state->config.strategies[mode];
    if (!strategy) {
      std::string error;
      try {
        strategy = memory::MakeMessageMemory(mode, options.memory, &error);
      } catch (const std::exception& e) {  // a strategy's own resources (std::bad_alloc)
        error = e.what();
      }
      if (!strategy) {
        state->config.strategies.erase(mode);
        Fail(where + "=" + Quoted(mode) + " is invalid: " + error);
        return nullptr;
      }
    }
    return strategy;
  };
  for (const auto& entry : state->config.registry.methods()) {
    auto override_it = options.method_memory_mode.find(entry->full_name);
    const bool overridden = override_it != options.method_memory_mode.end();
    auto given_it = options.method_memory_strategy.find(entry->full_name);
    std::shared_ptr<memory::MessageMemory> strategy =
        given_it != options.method_memory_strategy.end() ? given_it->second
        : overridden                                      ? nullptr
                                                          : options.memory_strategy;
    // Built-in gRPC services' messages are dynamic ones: the plain heap strategy serves them.
    if (entry->builtin) strategy.reset();
    const std::string mode = entry->builtin ? std::string("heap")
                             : strategy     ? std::string(strategy->name())
                             : overridden   ? std::string(override_it->second.name())
                                            : std::string(options.memory_mode.name());
    if (!strategy) {
      strategy = strategy_for(
          mode, overridden ? "method_memory_mode[" + entry->full_name + "]" : "memory_mode");
    }
    if (!strategy) return -1;
    auto binding = std::make_shared<server::MethodBinding>();
    binding->mode = mode;
    binding->service = entry->service_owner;
    binding->strategy = strategy;
    try {
      binding->memory = strategy->Bind(entry->service->GetRequestPrototype(entry->descriptor),
                                       entry->service->GetResponsePrototype(entry->descriptor));
    } catch (const std::exception& e) {
      return Fail("memory_mode " + Quoted(mode) + " cannot serve " + entry->full_name + ": " +
                  e.what());
    }
    const auto* streams = dynamic_cast<const GrpcStreamService*>(entry->service);
    entry->grpc_stream = streams != nullptr && streams->Find(entry->descriptor) != nullptr;
    entry->request_memory = std::make_unique<memory::RequestMemoryGate>(
        *binding->memory->request_prototype().GetDescriptor(), options.max_request_memory);
    entry->presence = std::make_unique<memory::PresenceAdvisor>(
        *binding->memory->response_prototype().GetDescriptor());
    entry->SetBinding(std::move(binding));
  }
  state->config.registry.IndexGrpcStreamPaths();
  return 0;
}

void Server::Impl::OnAccept(asio::ip::tcp::socket socket, bool internal_port) {
  ServerState& s = *state;
  net::Connection::Options connection_options;
  connection_options.idle_timeout_sec = s.config.options.idle_timeout_sec;
  connection_options.read_timeout_ms = TimeoutMs(s.config.options.read_timeout);
  connection_options.first_byte_timeout_ms = TimeoutMs(s.config.options.first_byte_timeout);
  connection_options.write_timeout_ms = TimeoutMs(s.config.options.write_timeout);
  connection_options.max_unwritten_bytes = s.config.options.max_unwritten_bytes;
  connection_options.read_pauses = &s.counters.read_pauses;
  connection_options.bytes_discarded = &s.counters.refused_bytes_unread;
  auto served =
      std::make_unique<server::ServerConnection>(&s, s.runtime->handler_threads(), internal_port);
  const server::ServedConnection* served_side = served.get();
  auto connection =
      net::Connection::Create(std::move(socket), std::move(served), connection_options);
  switch (s.connections.Add(connection, served_side, s.config.options.max_connections)) {
    case server::ConnectionTable::AddResult::kAdded:
      break;
    case server::ConnectionTable::AddResult::kClosing:
      return;  // Stop() is closing everything: drop it (closes the fd)
    case server::ConnectionTable::AddResult::kFull:
      s.counters.connections_rejected.fetch_add(1, std::memory_order_relaxed);
      s.counters.malformed_log.Log(
          "closing connection from " + connection->remote_side() +
          ": reached max_connections=" + std::to_string(s.config.options.max_connections));
      return;  // the socket closes with the connection
  }
  s.counters.connections_accepted.fetch_add(1, std::memory_order_relaxed);
  connection->Start();
}

Server::Server() : impl_(std::make_unique<Impl>()) {}

Server::~Server() {
  Stop();
  Join();
}

int Server::AddService(google::protobuf::Service* service, ServiceOwnership ownership) {
  std::lock_guard lock(impl_->mutex);
  if (impl_->phase != Impl::Phase::kIdle) {
    return impl_->Fail("AddService: the server was already started");
  }
  return impl_->state->config.registry.Add(service, ownership, &impl_->last_error);
}

int Server::Start(std::string_view address, const ServerOptions& given_options) {
  std::lock_guard lock(impl_->mutex);
  Impl& impl = *impl_;
  if (impl.phase != Impl::Phase::kIdle) {
    return impl.Fail(impl.phase == Impl::Phase::kRunning
                         ? "Start: the server is already running"
                         : "Start: a stopped server cannot be restarted; create a new Server");
  }
  ServerState& state = *impl.state;
  if (state.config.registry.methods().empty()) return impl.Fail("Start: no service was added");
  ServerOptions options = given_options;
  server::ApplyDeprecatedSpellings(&options);
  // ARENARPC_MEMORY_MODE replaces every memory choice of the options (docs/memory.md).
  if (const char* mode = std::getenv(server::kMemoryModeEnvironmentVariable);
      mode != nullptr && *mode != '\0') {
    if (std::string error = server::OverrideMemoryMode(mode, &options); !error.empty()) {
      return impl.Fail("Start: " + error);
    }
  }
  if (impl.ValidateOptions(options) != 0) return -1;
  // ServerOptions::capture, else the ARENARPC_CAPTURE environment variable (docs/capture.md).
  CaptureOptions capture_options = options.capture;
  if (capture_options.directory.empty()) {
    const char* setting = std::getenv(capture::kCaptureEnvironmentVariable);
    if (setting != nullptr && *setting != '\0') {
      if (std::string error = capture::ParseCaptureSetting(setting, &capture_options);
          !error.empty()) {
        return impl.Fail("Start: " + error);
      }
    }
  } else if (std::string error = capture::ValidateCaptureOptions(capture_options); !error.empty()) {
    return impl.Fail("Start: " + error);
  }
  asio::ip::tcp::endpoint endpoint;
  std::string endpoint_error;
  if (!net::ParseEndpoint(address, &endpoint, &endpoint_error)) {
    return impl.Fail("Start: " + endpoint_error);
  }
  std::string tls_error;
  state.config.tls = server::MakeServerTlsContext(options.tls, &tls_error);
  if (!tls_error.empty()) return impl.Fail("Start: " + tls_error);
  state.config.options = options;
  state.config.options.capture = capture_options;
  state.message_memory.set_limit(options.max_inflight_message_memory);
  AddGrpcBuiltinServices(options, &state.config.registry, state.health);
  if (impl.BindMethods(options) != 0) return -1;

  // Everything set up from here is released again, in reverse, unless Start() succeeds: the
  // runtime (threads, listening sockets) by its destructor, the rest by `startup`.
  Impl::Startup startup(impl);
  auto runtime = std::make_unique<server::ServerRuntime>(options);
  // The adaptive limit's floor: one call may wait while every handler thread works.
  state.admission.Configure(options.max_concurrency, options.max_queued_requests,
                            runtime->handler_threads());
  state.live.Init(state.config);
  if (options.has_builtin_services) {
    builtin::AddCoreBuiltinServices(&state.config.builtins, server::MakeServerView(impl.state),
                                    server::MakeServerSettings(impl.state));
  }
  std::string listen_error;
  if (!runtime->Listen(
          endpoint, options,
          [impl = &impl](asio::ip::tcp::socket socket, bool internal_port) {
            impl->OnAccept(std::move(socket), internal_port);
          },
          &listen_error)) {
    return impl.Fail("Start: " + listen_error);
  }
  if (!options.registry_url.empty()) {
    cluster::RegistrationInfo info;
    info.address = options.advertised_address.empty()
                       ? cluster::AdvertisedAddress(endpoint.address().to_string(), runtime->port())
                       : options.advertised_address;
    info.weight = options.registry_weight;
    info.tag = options.registry_tag;
    info.lease_ttl_s = cluster::LeaseTtlSeconds(options.registry_lease_ttl);
    std::string error;
    impl.registration = cluster::MakeServerRegistration(options.registry_url, info, &error);
    if (!impl.registration || !impl.registration->Start(&error)) {
      return impl.Fail("Start: registry_url: " + error);
    }
  }
  startup.Commit();
  impl.port = runtime->port();
  impl.internal_port = runtime->internal_port();
  if (!capture_options.directory.empty()) {
    state.capture = std::make_unique<capture::RequestCapture>(capture_options);
  }
  state.live.SetCapture(state.capture.get());
  state.runtime = std::move(runtime);
  state.runtime->StartAccepting();
  impl.phase = Impl::Phase::kRunning;
  impl.last_error.clear();
  return 0;
}

int Server::Start(int port, const ServerOptions* options) {
  if (port < 0 || port > 65535) {
    std::lock_guard lock(impl_->mutex);
    return impl_->Fail("Start: port " + std::to_string(port) + " is invalid (expected 0..65535)");
  }
  return Start("0.0.0.0:" + std::to_string(port), options != nullptr ? *options : ServerOptions{});
}

int Server::Start(const char* ip_and_port, const ServerOptions* options) {
  if (ip_and_port == nullptr) {
    std::lock_guard lock(impl_->mutex);
    return impl_->Fail("Start: the address is nullptr");
  }
  return Start(std::string_view(ip_and_port), options != nullptr ? *options : ServerOptions{});
}

const std::string& Server::last_error() const { return impl_->last_error; }

int Server::ReloadTlsCertificates() {
  std::lock_guard lock(impl_->mutex);
  const std::shared_ptr<net::TlsContext> tls = impl_->state->config.tls;
  if (!tls) return impl_->Fail("ReloadTlsCertificates: TLS is off (ServerOptions::tls)");
  std::string error;
  if (!tls->Reload(&error)) return impl_->Fail("ReloadTlsCertificates: " + error);
  return 0;
}

void Server::SetServingStatus(std::string_view service, bool serving) {
  impl_->state->health->Set(service, serving);
}

void Server::SetServingStatus(bool serving) { impl_->state->health->SetAll(serving); }

int Server::listen_port() const { return impl_->port; }

int Server::internal_listen_port() const { return impl_->internal_port; }

int Server::Stop() {
  Impl& impl = *impl_;
  {
    std::lock_guard lock(impl.mutex);
    if (impl.phase != Impl::Phase::kRunning) return 0;
  }
  ServerState& state = *impl.state;
  if (state.runtime->OnServerThread()) {
    // Waiting here would wait for this very thread; Stop() belongs on a thread of the application.
    impl.last_error =
        "Stop: called from a thread of the server (a handler); call it from another thread";
    return -1;
  }
  if (!state.admission.StartStopping()) return 0;  // another Stop() runs
  state.health->Shutdown();  // health Watch streams send NOT_SERVING and end
  // Out of the registry first, so that clients stop choosing this server while it drains.
  if (impl.registration) impl.registration->Stop();
  state.runtime->CloseListeners();
  for (const auto& connection : state.connections.Open()) {
    static_cast<server::ServerConnection&>(connection->delegate()).OnServerStopping(*connection);
  }

  // Calls in flight may finish until the deadline; new requests already get ELOGOFF.
  const auto deadline = std::chrono::steady_clock::now() + state.config.options.stop_deadline;
  state.admission.WaitIdle(deadline);
  const std::vector<std::shared_ptr<net::Connection>> open = state.connections.StartClosing();
  // Every reply produced so far is written before its connection closes, until the deadline.
  for (const auto& connection : open) connection->CloseWhenFlushed();
  state.connections.WaitEmpty(deadline);
  for (const auto& connection : open) connection->Close();
  // A thread stuck in a handler cannot run the closing of its connections' sockets: bound the
  // wait (Join() still waits for the threads themselves).
  state.connections.WaitEmpty(std::chrono::steady_clock::now() + std::chrono::seconds(1));
  {
    std::lock_guard lock(impl.mutex);
    impl.phase = Impl::Phase::kStopped;
  }
  impl.stopped_cv.notify_all();
  return 0;
}

int Server::Join() {
  Impl& impl = *impl_;
  std::unique_lock lock(impl.mutex);
  if (impl.phase == Impl::Phase::kIdle) return 0;
  impl.stopped_cv.wait(lock, [&] { return impl.phase == Impl::Phase::kStopped; });
  if (impl.joined) return 0;
  impl.joined = true;
  ServerState& state = *impl.state;
  if (state.runtime->OnServerThread()) {
    impl.last_error = "Join: called from a thread of the server (a handler)";
    return -1;
  }
  // Like a handler that blocks its thread, a fiber still waiting (on a backend without a timeout)
  // holds Join() up; the threads keep running until it is done.
  state.runtime->Join();
  return 0;
}

void Server::RunUntilAskedToQuit() {
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->phase != Impl::Phase::kRunning) return;
  }
  asio::io_context context;
  asio::signal_set signals(context, SIGINT, SIGTERM);
  signals.async_wait([&](const asio::error_code& error, int) {
    if (!error) context.stop();
  });
  // Also return when someone else stopped the server.
  asio::steady_timer poll(context);
  std::function<void()> arm = [&] {
    poll.expires_after(std::chrono::milliseconds(100));
    poll.async_wait([&](const asio::error_code& error) {
      if (error) return;
      std::unique_lock lock(impl_->mutex);
      if (impl_->phase != Impl::Phase::kRunning) {
        context.stop();
      } else {
        lock.unlock();
        arm();
      }
    });
  };
  arm();
  context.run();
  Stop();
  Join();
}

MethodStats Server::GetMethodStats(std::string_view full_method_name) const {
  const server::MethodEntry* entry = impl_->state->config.registry.FindMethod(full_method_name);
  if (entry == nullptr) return MethodStats{};
  return server::SnapshotMethod(*entry, std::chrono::steady_clock::now());
}

ServerStats Server::GetServerStats() const { return server::SnapshotServer(*impl_->state); }

std::shared_ptr<const stats::ServerView> internal::ServerAccess::View(const Server& server) {
  return server::MakeServerView(server.impl_->state);
}

capture::RequestCapture* internal::ServerAccess::Capture(const Server& server) {
  return server.impl_->state->capture.get();
}

std::shared_ptr<stats::ServerSettings> internal::ServerAccess::Settings(const Server& server) {
  return server::MakeServerSettings(server.impl_->state);
}

int Server::SetLiveSetting(std::string_view name, std::string_view value) {
  std::lock_guard lock(impl_->mutex);
  if (impl_->phase != Impl::Phase::kRunning) {
    return impl_->Fail("SetLiveSetting(" + std::string(name) + "): the server is not running");
  }
  std::string error;
  const stats::SettingOrigin origin{"Server::SetLiveSetting", ""};
  if (impl_->state->live.Set(impl_->state->config, impl_->state->admission, name, value,
                                origin, &error) !=
      stats::SetVerdict::kChanged) {
    return impl_->Fail("SetLiveSetting: " + error);
  }
  return 0;
}

std::vector<ServerSetting> Server::ListSettings() const {
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->phase == Impl::Phase::kIdle) return {};
  }
  return impl_->state->live.List(impl_->state->config);
}

std::vector<SettingChange> Server::SettingChanges() const {
  return impl_->state->live.Changes();
}

std::vector<std::string> Server::ListMethods() const {
  std::vector<std::string> names;
  for (const auto& entry : impl_->state->config.registry.methods()) {
    if (!entry->builtin) names.push_back(entry->full_name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace arenarpc
