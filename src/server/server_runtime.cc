#include "server/server_runtime.h"

#include <algorithm>
#include <exception>
#include <thread>

namespace arenarpc::server {
namespace {

// Finished fibers whose stacks are kept for the next calls (docs/server.md, the memory bound).
constexpr int kMaxCachedFiberStacks = 512;

}  // namespace

ServerRuntime::ServerRuntime(const ServerOptions& options)
    : fiber_shares_(FiberShares::LimitsFor(options)) {
  const int io_threads = options.num_threads > 0
                             ? options.num_threads
                             : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  loops_ =
      std::make_unique<net::EventLoopGroup>(io_threads, "arenarpc-io", net::LoopSharing::kShared);
  io_page_sweeper_ = std::make_unique<net::IoPageSweeper>(loops_->loop(0));
  handler_threads_ = options.worker_threads > 0 ? options.worker_threads : io_threads;
  if (options.worker_threads > 0) {
    workers_ = std::make_unique<asio::thread_pool>(options.worker_threads);
  }
  fiber::Scheduler::Options fiber_options;
  fiber_options.stack_size = options.fiber_stack_size;
  fiber_options.max_fibers = options.max_fibers;
  fiber_options.cached_stacks = std::min(options.max_fibers, kMaxCachedFiberStacks);
  fibers_ = std::make_unique<fiber::Scheduler>(
      workers_ ? asio::any_io_executor(workers_->get_executor())
               : asio::any_io_executor(loops_->loop(0).get_executor()),
      fiber_options);
}

ServerRuntime::~ServerRuntime() {
  CloseListeners();
  StopLoops();
  acceptor_.reset();  // their timers and sockets belong to the loops: gone first
  internal_acceptor_.reset();
  fibers_.reset();
  workers_.reset();  // stops and joins the pool
  io_page_sweeper_.reset();
  loops_.reset();
}

bool ServerRuntime::Listen(const asio::ip::tcp::endpoint& endpoint, const ServerOptions& options,
                           OnAccept on_accept, std::string* error) {
  try {
    acceptor_ = net::Acceptor::Listen(*loops_, endpoint, [on_accept](asio::ip::tcp::socket socket) {
      on_accept(std::move(socket), /*internal_port=*/false);
    });
  } catch (const std::exception& e) {
    *error = "cannot listen on " + endpoint.address().to_string() + ":" +
             std::to_string(endpoint.port()) + ": " + e.what();
    return false;
  }
  if (options.internal_port < 0) return true;
  try {
    const asio::ip::tcp::endpoint internal(asio::ip::make_address(options.internal_address),
                                           static_cast<unsigned short>(options.internal_port));
    internal_acceptor_ =
        net::Acceptor::Listen(*loops_, internal, [on_accept](asio::ip::tcp::socket socket) {
          on_accept(std::move(socket), /*internal_port=*/true);
        });
  } catch (const std::exception& e) {
    *error = "cannot listen on internal_address:internal_port=" + options.internal_address + ":" +
             std::to_string(options.internal_port) + ": " + e.what();
    return false;
  }
  return true;
}

void ServerRuntime::StartAccepting() {
  if (acceptor_) acceptor_->Start();
  if (internal_acceptor_) internal_acceptor_->Start();
}

void ServerRuntime::CloseListeners() {
  // Closing runs on the loops: once (after Join() they no longer run).
  if (listeners_closed_) return;
  listeners_closed_ = true;
  if (acceptor_) acceptor_->Close();
  if (internal_acceptor_) internal_acceptor_->Close();
}

bool ServerRuntime::OnServerThread() const {
  return loops_->InLoopThread() || (workers_ && workers_->get_executor().running_in_this_thread());
}

void ServerRuntime::StopLoops() {
  io_page_sweeper_->Stop();  // its timer would keep the loops running
  loops_->Stop();
}

void ServerRuntime::Join() {
  fibers_->WaitIdle();
  StopLoops();
  if (workers_) workers_->join();
}

int ServerRuntime::port() const noexcept { return acceptor_ ? acceptor_->port() : -1; }

int ServerRuntime::internal_port() const noexcept {
  return internal_acceptor_ ? internal_acceptor_->port() : -1;
}

}  // namespace arenarpc::server
