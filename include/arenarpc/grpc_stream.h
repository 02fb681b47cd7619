#pragma once
// gRPC streaming methods on the server's port (docs/grpc.md, "Streaming methods"): server-,
// client- and bidirectional streaming rpcs of a .proto service, served over HTTP/2 next to the
// unary methods. A handler gets a GrpcServerStream: it reads the client's messages and writes its
// own, each one made by the method's memory strategy (heap / arena / paged / reuse / auto), and
// the call ends with the status of its controller when the handler returns.
//
//   arenarpc::GrpcStreamService streams(example::ChatService::descriptor(), &unary_impl);
//   streams.AddMethod("Chat", [](arenarpc::GrpcServerStream& stream) {
//     arenarpc::GrpcStreamMessages m;
//     while (stream.Read(&m)) {                         // the fiber waits for the next message
//       auto& in = m.request<example::ChatRequest>();
//       m.response<example::ChatReply>().set_text(in.text());
//       if (!stream.Write(std::move(m))) return;        // waits for the client's window
//     }
//   });
//   server.AddService(&streams, arenarpc::SERVER_DOESNT_OWN_SERVICE);
//
// Handlers run on fibers (arenarpc/fiber.h): Read() and Write() suspend the fiber, not its thread.

#include <google/protobuf/service.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "arenarpc/controller.h"
#include "arenarpc/memory/message_memory.h"

namespace google::protobuf {
class MethodDescriptor;
class ServiceDescriptor;
}  // namespace google::protobuf

namespace arenarpc {

// One request message and one response message of a streaming method, from its memory strategy
// (a MessagePair). Read() fills request(); Write() sends response() and gives both back to the
// strategy. Dropping the object gives them back too. Move-only.
class GrpcStreamMessages {
 public:
  GrpcStreamMessages() = default;
  GrpcStreamMessages(GrpcStreamMessages&&) noexcept = default;  // keep_ first, pair_ after
  GrpcStreamMessages& operator=(GrpcStreamMessages&&) noexcept;
  ~GrpcStreamMessages();

  explicit operator bool() const noexcept { return static_cast<bool>(pair_); }
  google::protobuf::Message* request() const noexcept { return pair_.request(); }
  google::protobuf::Message* response() const noexcept { return pair_.response(); }
  // The messages as the method's generated types.
  template <class T>
  T& request() const {
    return *static_cast<T*>(pair_.request());
  }
  template <class T>
  T& response() const {
    return *static_cast<T*>(pair_.response());
  }
  // Gives the messages back to the strategy now.
  void Release() noexcept;

 private:
  friend class GrpcServerStream;
  std::shared_ptr<void> keep_;  // what the strategy needs alive until the pair is released
  memory::MessagePair pair_;
};

// One call of a streaming method, for its handler. Read and write from one fiber at a time (one
// reader and one writer may run on two fibers at once).
class GrpcServerStream {
 public:
  virtual ~GrpcServerStream() = default;

  // The call's controller: metadata (request_user_fields; response_user_fields go out as the
  // response headers with the first Write(), or in a trailers-only reply), the deadline
  // (deadline_hint_ms), IsCanceled()/NotifyOnCancel(), SetFailed() for the final status.
  virtual Controller& controller() = 0;
  virtual const google::protobuf::MethodDescriptor& method() const = 0;

  // The next message of the client into fresh messages from the method's strategy (what
  // *messages held before is given back first). Waits for it. false: no more messages — the
  // client ended its side, the call was canceled (RST_STREAM, the connection closed) or its
  // deadline passed (controller().IsCanceled() tells these apart), or the message could not be
  // parsed or would hold more than max_request_memory once parsed (then controller().Failed()
  // with EREQUEST: the call ends INVALID_ARGUMENT), or the server's max_inflight_message_memory
  // is reached (ELIMIT: UNAVAILABLE).
  virtual bool Read(GrpcStreamMessages* messages) = 0;

  // Fresh messages from the method's strategy, for a Write() that answers no Read().
  virtual GrpcStreamMessages NewMessages() = 0;

  // Sends messages.response() as the next response message, then gives the messages back to the
  // strategy. Waits while the stream holds max_buffered_bytes of earlier messages that the
  // client's HTTP/2 flow-control window did not take (or the connection its max_unwritten_bytes).
  // The stream holds at most max_buffered_bytes + one message. false: the call was canceled, its
  // deadline passed, or the response could not be serialized (then controller().Failed()).
  virtual bool Write(GrpcStreamMessages&& messages) = 0;
  // Write() without waiting: 0 sent; EAGAIN no room now (WaitWritable()); ECANCELED the call
  // ended; ERESPONSE the response could not be serialized. On EAGAIN *messages is kept.
  virtual int TryWrite(GrpcStreamMessages* messages) = 0;
  // Waits until a TryWrite() may succeed, at most until `deadline`. 0, ETIMEDOUT or ECANCELED.
  virtual int WaitWritable(std::chrono::steady_clock::time_point deadline) = 0;

  // Trailing metadata, sent with grpc-status when the call ends.
  virtual void AddTrailingMetadata(std::string name, std::string value) = 0;

 protected:
  // For implementations: the pair inside GrpcStreamMessages.
  static memory::MessagePair& PairOf(GrpcStreamMessages& messages) noexcept {
    return messages.pair_;
  }
  static void Keep(GrpcStreamMessages& messages, std::shared_ptr<void> keep) noexcept {
    messages.keep_ = std::move(keep);
  }
};

struct GrpcStreamMethodOptions {
  // Response bytes (whole I/O pages) one stream may hold that the client's flow-control window did
  // not take yet; Write() waits past it. One message larger than this is still sent, alone.
  size_t max_buffered_bytes = 1u << 20;
};

using GrpcStreamHandler = std::function<void(GrpcServerStream& stream)>;

// A google::protobuf::Service for a .proto service with streaming rpcs: streaming methods go to
// the handlers added here, the others to `unary` (the generated service's implementation; nullptr:
// they are answered ENOMETHOD). Register it with Server::AddService() like any service. Over
// baidu_std and brpc's HTTP+JSON a streaming method is not served (ENOMETHOD); grpc-web and
// Connect clients call its server-streaming methods over HTTP/1.1 (docs/http.md, "Browsers"),
// where Write() waits while the connection holds max_buffered_bytes its socket did not take.
class GrpcStreamService final : public google::protobuf::Service {
 public:
  explicit GrpcStreamService(const google::protobuf::ServiceDescriptor* descriptor,
                             google::protobuf::Service* unary = nullptr);
  ~GrpcStreamService() override;

  // Serves the rpc `method` ("Chat" or "pkg.ChatService.Chat") with `handler`. Before
  // Server::Start(). 0, or -1 with *error (when given) saying why: no such rpc in the service,
  // not a streaming rpc, an empty handler.
  int AddMethod(std::string_view method, GrpcStreamHandler handler,
                const GrpcStreamMethodOptions& options = {}, std::string* error = nullptr);

  // The handler and options of a method added here, or nullptr.
  struct Entry {
    GrpcStreamHandler handler;
    GrpcStreamMethodOptions options;
  };
  const Entry* Find(const google::protobuf::MethodDescriptor* method) const;

  // google::protobuf::Service
  const google::protobuf::ServiceDescriptor* GetDescriptor() override { return descriptor_; }
  void CallMethod(const google::protobuf::MethodDescriptor* method,
                  google::protobuf::RpcController* controller,
                  const google::protobuf::Message* request, google::protobuf::Message* response,
                  google::protobuf::Closure* done) override;
  const google::protobuf::Message& GetRequestPrototype(
      const google::protobuf::MethodDescriptor* method) const override;
  const google::protobuf::Message& GetResponsePrototype(
      const google::protobuf::MethodDescriptor* method) const override;

 private:
  const google::protobuf::ServiceDescriptor* descriptor_;
  google::protobuf::Service* unary_;
  std::map<const google::protobuf::MethodDescriptor*, Entry> entries_;
};

}  // namespace arenarpc
