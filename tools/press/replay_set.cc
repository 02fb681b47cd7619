#include "press/replay_set.h"

#include <google/protobuf/util/json_util.h>

#include <filesystem>
#include <memory>
#include <set>

#include "capture/dump_reader.h"
#include "arenarpc/buffer_chain.h"
#include "protocol/compression.h"

namespace arenarpc::press {
namespace {

constexpr const char* kRawFile = "arenarpc_replay/raw.proto";
constexpr const char* kRawType = ".arenarpc.replay.Raw";

struct LoadedRecord {
  std::string file;
  capture::DumpRecord record;
};

ReplayProtocol CapturedOver(const capture::RpcDumpMeta& meta, bool* known) {
  *known = true;
  switch (meta.protocol()) {
    case capture::CAPTURED_BAIDU_STD: return ReplayProtocol::kBaiduStd;
    case capture::CAPTURED_HTTP: return ReplayProtocol::kHttp;
    case capture::CAPTURED_GRPC: return ReplayProtocol::kGrpc;
    default: break;
  }
  // A brpc dump: its ProtocolType.
  if (meta.protocol_type() == 1) return ReplayProtocol::kBaiduStd;
  if (meta.protocol_type() == 6) return ReplayProtocol::kHttp;
  *known = false;
  return ReplayProtocol::kBaiduStd;
}

// The body of an HTTP record's request (after the blank line), and whether it is JSON.
std::string_view HttpBody(std::string_view raw, bool* json) {
  const size_t end = raw.find("\r\n\r\n");
  const std::string_view head = raw.substr(0, end);
  *json = head.find("application/json") != std::string_view::npos;
  return end == std::string_view::npos ? std::string_view() : raw.substr(end + 4);
}

enum class ConvertedJson { kOk, kNoSchema, kNoMethod, kBadJson };

// An HTTP+JSON request body as its method's binary request message, through `schema`'s types.
ConvertedJson JsonToBinary(const DynamicMethod* schema, const capture::RpcDumpMeta& meta,
                           std::string_view body, std::string* binary) {
  if (schema == nullptr) return ConvertedJson::kNoSchema;
  const google::protobuf::ServiceDescriptor* service =
      schema->pool().FindServiceByName(meta.service_name());
  const google::protobuf::MethodDescriptor* method =
      service != nullptr ? service->FindMethodByName(meta.method_name()) : nullptr;
  if (method == nullptr) return ConvertedJson::kNoMethod;
  std::unique_ptr<google::protobuf::Message> request = schema->NewMessage(*method->input_type());
  if (!google::protobuf::util::JsonStringToMessage(
           google::protobuf::StringPiece(body.data(), body.size()), request.get())
           .ok()) {
    return ConvertedJson::kBadJson;
  }
  *binary = request->SerializeAsString();
  return ConvertedJson::kOk;
}

std::string Where(const LoadedRecord& loaded) {
  return loaded.file + ": record at offset " + std::to_string(loaded.record.offset);
}

}  // namespace

bool ParseReplayProtocol(std::string_view name, ReplayProtocol* protocol) {
  if (name == "baidu_std") *protocol = ReplayProtocol::kBaiduStd;
  else if (name == "http") *protocol = ReplayProtocol::kHttp;
  else if (name == "grpc") *protocol = ReplayProtocol::kGrpc;
  else return false;
  return true;
}

const char* ReplayProtocolName(ReplayProtocol protocol) {
  switch (protocol) {
    case ReplayProtocol::kBaiduStd: return "baidu_std";
    case ReplayProtocol::kHttp: return "http";
    case ReplayProtocol::kGrpc: return "grpc";
  }
  return "?";
}

const google::protobuf::MethodDescriptor* ReplaySet::MethodFor(const std::string& service,
                                                               const std::string& method,
                                                               std::string* error) {
  const google::protobuf::ServiceDescriptor* descriptor = pool_.FindServiceByName(service);
  const google::protobuf::MethodDescriptor* found =
      descriptor != nullptr ? descriptor->FindMethodByName(method) : nullptr;
  if (found == nullptr) *error = "no method " + service + "." + method + " was built";
  return found;
}

bool ReplaySet::Load(const std::vector<std::string>& sources, const ReplayProtocol* force,
                     const DynamicMethod* schema, std::ostream& report, std::string* error) {
  std::vector<std::string> paths;
  for (const std::string& source : sources) {
    std::error_code ec;
    if (std::filesystem::is_directory(source, ec)) {
      if (!capture::ListDumpFiles(source, &paths, error)) return false;
    } else {
      paths.push_back(source);
    }
  }
  if (paths.empty()) {
    *error = "--replay: no dump file (requests.*) in " +
             (sources.empty() ? std::string("(nothing given)") : sources.front());
    return false;
  }
  std::vector<LoadedRecord> records;
  for (const std::string& path : paths) {
    std::string bytes;
    if (!capture::ReadDumpFile(path, &bytes, error)) return false;
    capture::DumpReader reader(bytes);
    LoadedRecord loaded{path, {}};
    while (reader.Next(&loaded.record)) records.push_back(loaded);
    for (const capture::DumpDamage& damage : reader.damages()) {
      report << "[replay] " << path << ": offset " << damage.offset << ": " << damage.reason
             << "; " << damage.skipped_bytes << " bytes skipped\n";
      ++damaged_;
    }
  }
  if (records.empty()) {
    *error = "--replay: the dump files hold no readable record";
    return false;
  }

  // One generated file per service, its methods taking and returning a field-less message.
  google::protobuf::FileDescriptorProto raw;
  raw.set_name(kRawFile);
  raw.set_package("arenarpc.replay");
  raw.add_message_type()->set_name("Raw");
  pool_.BuildFile(raw);
  std::map<std::string, std::set<std::string>> methods;
  for (const LoadedRecord& loaded : records) {
    const capture::RpcDumpMeta& meta = loaded.record.meta;
    if (!meta.service_name().empty() && !meta.method_name().empty()) {
      methods[meta.service_name()].insert(meta.method_name());
    }
  }
  for (const auto& [service, names] : methods) {
    google::protobuf::FileDescriptorProto file;
    file.set_name("arenarpc_replay/" + service + ".proto");
    file.add_dependency(kRawFile);
    const size_t dot = service.rfind('.');
    if (dot != std::string::npos) file.set_package(service.substr(0, dot));
    auto* proto = file.add_service();
    proto->set_name(dot == std::string::npos ? service : service.substr(dot + 1));
    for (const std::string& name : names) {
      auto* method = proto->add_method();
      method->set_name(name);
      method->set_input_type(kRawType);
      method->set_output_type(kRawType);
    }
    if (pool_.BuildFile(file) == nullptr) {
      *error = "--replay: cannot describe service '" + service + "' (not a protobuf name?)";
      return false;
    }
  }

  calls_.reserve(records.size());
  std::vector<std::shared_ptr<PressRequest>> requests;
  for (const LoadedRecord& loaded : records) {
    const capture::RpcDumpMeta& meta = loaded.record.meta;
    const std::string& bytes = loaded.record.request;
    bool known = false;
    const ReplayProtocol captured = CapturedOver(meta, &known);
    if (!known) {
      report << "[replay] " << Where(loaded) << ": protocol_type " << meta.protocol_type()
             << " is not replayed (baidu_std, http, grpc); skipped\n";
      continue;
    }
    ReplayCall call;
    call.protocol = force != nullptr ? *force : captured;
    call.method_name = meta.service_name() + "." + meta.method_name();
    auto request = std::make_shared<PressRequest>();
    request->is_echo = false;
    // The request's message bytes (binary forms), inflated.
    std::string message;
    if (captured == ReplayProtocol::kHttp) {
      bool json = false;
      const std::string_view body = HttpBody(bytes, &json);
      if (call.protocol == ReplayProtocol::kHttp) {
        call.raw_http = bytes;
      } else if (json) {
        const ConvertedJson converted = JsonToBinary(schema, meta, body, &message);
        if (converted == ConvertedJson::kNoSchema) {
          *error = Where(loaded) + ": an HTTP+JSON request cannot be sent over " +
                   ReplayProtocolName(call.protocol) + " without its .proto (give it with --proto)";
          return false;
        }
        if (converted == ConvertedJson::kNoMethod) {
          *error = Where(loaded) + ": --proto declares no method " + call.method_name;
          return false;
        }
        if (converted == ConvertedJson::kBadJson) {
          report << "[replay] " << Where(loaded) << ": its JSON body is not a "
                 << call.method_name << " request; skipped\n";
          continue;
        }
      } else {
        message = std::string(body);
      }
    } else {
      const size_t attachment = static_cast<size_t>(std::max<int64_t>(0, meta.attachment_size()));
      if (attachment > bytes.size()) {
        report << "[replay] " << Where(loaded) << ": attachment_size " << attachment
               << " exceeds the request's " << bytes.size() << " bytes; skipped\n";
        continue;
      }
      message = bytes.substr(0, bytes.size() - attachment);
      call.attachment = bytes.substr(bytes.size() - attachment);
      if (meta.compress_type() != 0) {
        net::BufferChain in, out;
        in.Append(message);
        std::string why;
        if (!protocol::Decompress(meta.compress_type(), in, &out, &why)) {
          report << "[replay] " << Where(loaded) << ": does not inflate (" << why
                 << "); skipped\n";
          continue;
        }
        message = out.ToString();
        call.compress_type = meta.compress_type();
      }
      for (const auto& header : meta.headers()) {
        if (header.name() == "grpc-encoding") continue;  // set from compress_type
        call.metadata.emplace_back(header.name(), header.value());
      }
      if (call.protocol == ReplayProtocol::kGrpc && !call.attachment.empty()) {
        *error = Where(loaded) + ": a baidu_std attachment cannot be sent over gRPC";
        return false;
      }
      if (call.protocol == ReplayProtocol::kHttp) {
        call.raw_http = "POST /" + meta.service_name() + "/" + meta.method_name() +
                        " HTTP/1.1\r\nhost: replay\r\ncontent-type: application/proto\r\n"
                        "content-length: " + std::to_string(message.size()) + "\r\n\r\n" +
                        message;
      }
    }
    if (call.protocol != ReplayProtocol::kHttp) {
      if (!request->user.ParseFromString(message)) {
        report << "[replay] " << Where(loaded) << ": the request is not a protobuf message; "
               << "skipped\n";
        continue;
      }
      call.method = MethodFor(meta.service_name(), meta.method_name(), error);
      if (call.method == nullptr) return false;
    }
    ++by_protocol_[ReplayProtocolName(call.protocol)];
    calls_.push_back(std::move(call));
    requests.push_back(std::move(request));
  }
  if (calls_.empty()) {
    *error = "--replay: no record can be replayed";
    return false;
  }
  // The calls vector is complete: its addresses are stable from here.
  for (size_t i = 0; i < calls_.size(); ++i) {
    requests[i]->replay = &calls_[i];
    requests_.push_back(std::move(requests[i]));
  }
  return true;
}

}  // namespace arenarpc::press
