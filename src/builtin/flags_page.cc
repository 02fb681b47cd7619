#include "builtin/flags_page.h"

#include "builtin/page_format.h"
#include "builtin/page_view.h"

namespace arenarpc::builtin {
namespace {

void ServeFlags(const stats::ServerView& view, const BuiltinRequest& request, BuiltinReply* reply) {
  if (RejectUnlessGet(request, reply)) return;
  reply->body = FormatServerOptions(view.Options());
}

}  // namespace

std::string FormatServerOptions(const ServerOptions& o) {
  std::string text;
  auto line = [&](std::string_view name, const std::string& value) {
    text.append(name).append(" = ").append(value).append("\n");
  };
  auto number = [](auto value) { return std::to_string(value); };
  line("num_threads", number(o.num_threads));
  line("worker_threads", number(o.worker_threads));
  line("memory_mode", o.memory_strategy ? std::string(o.memory_strategy->name()) + " (object)"
                                        : o.memory_mode);
  line("memory.arena.start_block_size", number(o.memory.arena.start_block_size));
  line("memory.arena.max_block_size", number(o.memory.arena.max_block_size));
  line("memory.reuse.max_pooled_objects", number(o.memory.reuse.max_pooled_objects));
  line("memory.reuse.max_object_bytes", number(o.memory.reuse.max_object_bytes));
  line("memory.reuse.max_pool_bytes", number(o.memory.reuse.max_pool_bytes));
  line("memory.reuse.sample_every", number(o.memory.reuse.sample_every));
  line("memory.reuse.mirror_responses", o.memory.reuse.mirror_responses ? "true" : "false");
  line("memory.page_size", number(o.memory.page_size));
  line("memory.page_cache_capacity", number(o.memory.page_cache_capacity));
  line("memory.thread_cache_pages", number(o.memory.thread_cache_pages));
  for (const auto& [method, mode] : o.method_memory_mode) {
    line("method_memory_mode[" + method + "]", mode);
  }
  for (const auto& [method, strategy] : o.method_memory_strategy) {
    line("method_memory_strategy[" + method + "]",
         strategy ? std::string(strategy->name()) + " (object)" : "null");
  }
  line("max_body_size", number(o.max_body_size));
  line("max_concurrency", o.max_concurrency.spec());
  line("max_queued_requests", number(o.max_queued_requests));
  line("max_queued_requests_per_connection", number(o.max_queued_requests_per_connection));
  line("max_connections", number(o.max_connections));
  line("max_unwritten_bytes", number(o.max_unwritten_bytes));
  line("max_queued_request_bytes", number(o.max_queued_request_bytes));
  line("idle_timeout_sec", number(o.idle_timeout_sec));
  line("read_timeout_ms", number(o.read_timeout_ms));
  line("stop_deadline_ms", number(o.stop_deadline_ms));
  return text;
}

void AddFlagsPage(BuiltinRegistry* registry, std::shared_ptr<const stats::ServerView> view) {
  registry->Add("/flags", "the server's effective options (read-only)",
                BindView(view, ServeFlags));
}

}  // namespace arenarpc::builtin
