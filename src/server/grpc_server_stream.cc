// arenarpc/grpc_stream.h: a streaming method's handler on a gRPC call of the HTTP/2 port (or a
// grpc-web / Connect server-streaming call over HTTP/1.1). The call is admitted and run as a unary
// one (ServerCall, with an empty request); GrpcStreamService runs the handler with a
// GrpcServerStream over the protocol's stream (ServerStreamTransport), and the call's reply ends
// the stream with its status (the protocol's Reply).
#include "arenarpc/grpc_stream.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <string>
#include <utility>

#include "arenarpc/error_codes.h"
#include "protocol/payload_bytes.h"
#include "protocol/payload_codec.h"
#include "protocol/rpc_meta.pb.h"
#include "server/server_call.h"
#include "server/server_state.h"
#include "server/stream_transport.h"

namespace arenarpc {

GrpcStreamMessages& GrpcStreamMessages::operator=(GrpcStreamMessages&& other) noexcept {
  pair_ = std::move(other.pair_);  // the old pair goes back while its strategy is still kept
  keep_ = std::move(other.keep_);
  return *this;
}

GrpcStreamMessages::~GrpcStreamMessages() { pair_.Release(); }

void GrpcStreamMessages::Release() noexcept {
  pair_.Release();
  keep_.reset();
}

namespace {

// What a read message keeps until it goes back to its strategy: its charge against
// max_inflight_message_memory (returned after the pair), the strategy, the server state.
struct ReadKeep {
  std::shared_ptr<server::ServerState> state;
  std::shared_ptr<server::MethodBinding> binding;
  memory::MessageMemoryBudget::Charge charge;
};

class ServerStream final : public GrpcServerStream {
 public:
  ServerStream(server::ServerStreamTransport& protocol, server::ServerCall& call,
               const GrpcStreamMethodOptions& options)
      : protocol_(protocol),
        call_(call),
        key_(call.correlation_id()),
        options_(options),
        binding_(call.binding()),
        entry_(protocol.RegisterStream(key_, call.method().full_name)),
        counters_(entry_.counters()) {}

  Controller& controller() override { return call_.controller(); }
  const google::protobuf::MethodDescriptor& method() const override {
    return *call_.method().descriptor;
  }

  GrpcStreamMessages NewMessages() override {
    GrpcStreamMessages messages;
    Keep(messages, binding_);
    PairOf(messages) = binding_->memory->Acquire();
    return messages;
  }

  bool Read(GrpcStreamMessages* messages) override {
    messages->Release();
    net::BufferChain bytes;
    int compress_type = 0;
    const int rc = protocol_.StreamRead(key_, &bytes, &compress_type);
    ++read_count_;
    if (rc == 0 && counters_ != nullptr) counters_->Received(bytes.size());
    if (rc == EREQUEST) {
      controller().SetFailed(EREQUEST, "request message #" + std::to_string(read_count_) +
                                           " is compressed without grpc-encoding");
    } else if (rc == ETIMEDOUT) {
      const std::string idle_ms =
          std::to_string(protocol_.state().config.options.stream_idle_timeout.count());
      controller().SetFailed(ERPCTIMEDOUT, "no request message for " + idle_ms +
                                               " ms (server's stream_idle_timeout=" + idle_ms +
                                               "ms)");
    }
    if (rc != 0) return false;
    GrpcStreamMessages fresh = NewMessages();
    protocol::PayloadBytes payload;
    std::string detail;
    const net::BufferChain no_attachment;
    memory::ParseResult parsed = memory::ParseResult::kInvalidBytes;
    if (protocol::OpenPayload(protocol::PayloadEncoding::Compressed(compress_type), bytes,
                              no_attachment, &payload, &detail, protocol_.max_body_size())) {
      // max_request_memory and max_inflight_message_memory, as for a unary request
      auto keep = std::make_shared<ReadKeep>();
      keep->state = protocol_.state().shared_from_this();
      keep->binding = binding_;
      const memory::RequestMemoryGate::Decision decision = call_.method().request_memory->Admit(
          payload, protocol_.state().message_memory, &keep->charge);
      if (decision.verdict != memory::RequestMemoryGate::Verdict::kAdmitted) {
        controller().SetFailed(
            decision.verdict == memory::RequestMemoryGate::Verdict::kTooLarge ? EREQUEST : ELIMIT,
            "request message #" + std::to_string(read_count_) + ": " + decision.text);
        return false;
      }
      Keep(fresh, std::move(keep));
      parsed = PairOf(fresh).ParseRequest(payload);
      if (parsed != memory::ParseResult::kOk) {
        detail = protocol::ParseFailureDetail(*fresh.request(), parsed);
      }
    }
    if (parsed != memory::ParseResult::kOk) {
      controller().SetFailed(EREQUEST, "Fail to parse request message #" +
                                           std::to_string(read_count_) + " as " +
                                           fresh.request()->GetTypeName() + ": " + detail);
      return false;
    }
    *messages = std::move(fresh);
    return true;
  }

  bool Write(GrpcStreamMessages&& messages) override {
    GrpcStreamMessages owned = std::move(messages);
    return Send(&owned, /*wait=*/true) == 0;
  }

  int TryWrite(GrpcStreamMessages* messages) override {
    return Send(messages, /*wait=*/false);
  }

  int WaitWritable(std::chrono::steady_clock::time_point deadline) override {
    return protocol_.StreamWaitRoom(key_, options_.max_buffered_bytes, /*wait=*/true, deadline);
  }

  void AddTrailingMetadata(std::string name, std::string value) override {
    protocol_.AddStreamTrailer(key_, std::move(name), std::move(value));
  }

 private:
  int Send(GrpcStreamMessages* messages, bool wait) {
    if (!*messages) return EINVAL;
    const int room = protocol_.StreamWaitRoom(key_, options_.max_buffered_bytes, wait,
                                              std::chrono::steady_clock::time_point::max());
    if (room != 0) {
      if (room != EAGAIN) messages->Release();
      return room == ETIMEDOUT ? ECANCELED : room;
    }
    if (!started_) {
      started_ = true;
      compressed_ = controller().response_compress_type() == COMPRESS_TYPE_GZIP &&
                    protocol_.StreamAcceptsGzip(key_);
    }
    const memory::MessagePair& pair = PairOf(*messages);
    pair.PrepareResponse();
    net::BufferChain out;
    std::string error;
    const bool packed = protocol::SerializePayload(*pair.response(), compressed_ ? 2 : 0, &out,
                                                   &error, "response");
    messages->Release();  // back to the strategy before the bytes wait for the window
    if (!packed) {
      controller().SetFailed(ERESPONSE, error);
      return ERESPONSE;
    }
    const auto* metadata = sent_headers_ ? nullptr : &controller().response_user_fields();
    sent_headers_ = true;
    const size_t bytes = out.size();
    const int rc = protocol_.StreamSend(key_, std::move(out), compressed_, metadata);
    if (rc == 0 && counters_ != nullptr) counters_->Sent(bytes);
    return rc;
  }

  server::ServerStreamTransport& protocol_;
  server::ServerCall& call_;
  const int64_t key_;
  const GrpcStreamMethodOptions options_;
  const std::shared_ptr<server::MethodBinding> binding_;
  // Shown on the pages while the handler runs (server/grpc_server_protocol.h RegisterStream).
  stream::StreamRegistry::Entry entry_;
  stream::StreamCounters* const counters_;  // entry_'s; null when not registered
  uint64_t read_count_ = 0;
  bool started_ = false;
  bool compressed_ = false;
  bool sent_headers_ = false;
};

}  // namespace

GrpcStreamService::GrpcStreamService(const google::protobuf::ServiceDescriptor* descriptor,
                                     google::protobuf::Service* unary)
    : descriptor_(descriptor), unary_(unary) {}

GrpcStreamService::~GrpcStreamService() = default;

int GrpcStreamService::AddMethod(std::string_view method, GrpcStreamHandler handler,
                                 const GrpcStreamMethodOptions& options, std::string* error) {
  auto fail = [&](std::string text) {
    if (error != nullptr) *error = std::move(text);
    return -1;
  };
  if (descriptor_ == nullptr) return fail("GrpcStreamService has no service descriptor");
  std::string_view name = method;
  const std::string prefix = descriptor_->full_name() + ".";
  if (name.substr(0, prefix.size()) == prefix) name.remove_prefix(prefix.size());
  const google::protobuf::MethodDescriptor* found = descriptor_->FindMethodByName(std::string(name));
  if (found == nullptr) {
    return fail("no rpc '" + std::string(method) + "' in service " + descriptor_->full_name());
  }
  if (!found->client_streaming() && !found->server_streaming()) {
    return fail("rpc " + found->full_name() + " is not a streaming rpc");
  }
  if (!handler) return fail("empty handler for " + found->full_name());
  entries_[found] = Entry{std::move(handler), options};
  return 0;
}

const GrpcStreamService::Entry* GrpcStreamService::Find(
    const google::protobuf::MethodDescriptor* method) const {
  auto it = entries_.find(method);
  return it == entries_.end() ? nullptr : &it->second;
}

void GrpcStreamService::CallMethod(const google::protobuf::MethodDescriptor* method,
                                   google::protobuf::RpcController* controller,
                                   const google::protobuf::Message* request,
                                   google::protobuf::Message* response,
                                   google::protobuf::Closure* done) {
  const Entry* entry = Find(method);
  if (entry == nullptr) {
    if (unary_ != nullptr) {
      unary_->CallMethod(method, controller, request, response, done);
      return;
    }
    static_cast<Controller*>(controller)
        ->SetFailed(ENOMETHOD, "no implementation of " + method->full_name());
    done->Run();
    return;
  }
  auto* call = dynamic_cast<server::ServerCall*>(done);
  auto* protocol =
      call == nullptr ? nullptr : dynamic_cast<server::ServerStreamTransport*>(&call->sink());
  if (protocol == nullptr || !protocol->IsStreamCall(call->correlation_id())) {
    static_cast<Controller*>(controller)
        ->SetFailed(ENOMETHOD, "streaming rpc " + method->full_name() +
                                   " is served to gRPC clients (HTTP/2), and its server "
                                   "streaming to grpc-web and Connect clients");
    done->Run();
    return;
  }
  {
    ServerStream stream(*protocol, *call, entry->options);
    entry->handler(stream);
  }
  done->Run();  // the stream ends with the controller's status
}

const google::protobuf::Message& GrpcStreamService::GetRequestPrototype(
    const google::protobuf::MethodDescriptor* method) const {
  if (unary_ != nullptr) return unary_->GetRequestPrototype(method);
  return *google::protobuf::MessageFactory::generated_factory()->GetPrototype(
      method->input_type());
}

const google::protobuf::Message& GrpcStreamService::GetResponsePrototype(
    const google::protobuf::MethodDescriptor* method) const {
  if (unary_ != nullptr) return unary_->GetResponsePrototype(method);
  return *google::protobuf::MessageFactory::generated_factory()->GetPrototype(
      method->output_type());
}

}  // namespace arenarpc
