#include "server/grpc_health_service.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <string>
#include <utility>

#include "arenarpc/callback.h"
#include "arenarpc/error_codes.h"
#include "arenarpc/grpc_stream.h"
#include "server/grpc_builtin_protos.h"
#include "server/serving_status_table.h"

namespace arenarpc::server {

namespace {

using google::protobuf::Message;

// HealthCheckRequest.service
std::string ServiceOf(const Message& request) {
  return request.GetReflection()->GetString(request,
                                            request.GetDescriptor()->FindFieldByName("service"));
}

// HealthCheckResponse.status
void SetStatus(Message* response, ServingStatus status) {
  response->GetReflection()->SetEnumValue(
      response, response->GetDescriptor()->FindFieldByName("status"), static_cast<int>(status));
}

void WakeWatchers(std::shared_ptr<ServingStatusTable> table) { table->Wake(); }

void Watch(ServingStatusTable& table, const std::shared_ptr<ServingStatusTable>& shared,
           GrpcServerStream& stream) {
  GrpcStreamMessages messages;
  if (!stream.Read(&messages)) return;  // a failed read set the call's status
  const std::string service = ServiceOf(*messages.request());
  messages.Release();
  Controller& controller = stream.controller();
  // Cancellation (RST_STREAM, the connection closed, the deadline) wakes the wait below.
  controller.NotifyOnCancel(NewCallback(&WakeWatchers, shared));
  const auto canceled = [&controller] { return controller.IsCanceled(); };
  ServingStatus status = table.Get(service);
  for (;;) {
    GrpcStreamMessages reply = stream.NewMessages();
    SetStatus(reply.response(), status);
    if (!stream.Write(std::move(reply))) return;
    ServingStatus now = status;
    while (now == status) {
      if (table.shut_down()) {  // what Stop() changed went out above: end the call
        controller.SetFailed(ELOGOFF, "the server is stopping");
        return;
      }
      now = table.WaitChange(service, status, canceled);
      if (canceled()) return;
    }
    status = now;
  }
}

// Owns the unary part (Check) that the streaming service forwards to.
struct HealthService {
  explicit HealthService(std::shared_ptr<ServingStatusTable> table)
      : unary(GrpcBuiltinProtos::Get().Service(kHealthService)),
        streams(&GrpcBuiltinProtos::Get().Service(kHealthService), &unary) {
    unary.AddUnary("Check", [table](google::protobuf::RpcController* controller,
                                    const Message& request, Message* response) {
      const std::string service = ServiceOf(request);
      const ServingStatus status = table->Get(service);
      if (status == ServingStatus::kServiceUnknown) {
        static_cast<Controller*>(controller)->SetFailed(EREQUEST, "unknown service " + service);
        return;
      }
      SetStatus(response, status);
    });
    ServingStatusTable* raw = table.get();
    streams.AddMethod("Watch", [raw, table](GrpcServerStream& stream) {
      Watch(*raw, table, stream);
    });
  }
  BuiltinPoolService unary;
  GrpcStreamService streams;
};

}  // namespace

std::shared_ptr<google::protobuf::Service> MakeGrpcHealthService(
    std::shared_ptr<ServingStatusTable> table) {
  auto service = std::make_shared<HealthService>(std::move(table));
  return std::shared_ptr<google::protobuf::Service>(service, &service->streams);
}

}  // namespace arenarpc::server
