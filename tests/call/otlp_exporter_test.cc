// OtlpHttpExporter against a collector on loopback (a small HTTP server in the test: no
// OpenTelemetry collector is packaged in Debian): the OTLP/JSON body of a batch, the queue bound
// and what it drops, a collector that refuses, hangs or is down, and bad URLs.
#include "arenarpc/otlp_exporter.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace arenarpc {
namespace {

using google::protobuf::Struct;

// Accepts connections on 127.0.0.1:<port()>, reads one request each (headers and a
// Content-Length body), keeps the body and answers with `status` (0: never answers).
class Collector {
 public:
  explicit Collector(int status) : status_(status) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(0, bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)));
    socklen_t length = sizeof(address);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    EXPECT_EQ(0, listen(fd_, 16));
    thread_ = std::thread([this] { Serve(); });
  }
  ~Collector() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
    for (int fd : held_) close(fd);
  }
  int port() const { return port_; }
  std::vector<std::string> bodies() {
    std::lock_guard lock(mutex_);
    return bodies_;
  }

 private:
  void Serve() {
    while (!stop_) {
      const int client = accept(fd_, nullptr, nullptr);
      if (client < 0) return;
      std::string request;
      char buffer[65536];
      size_t need = std::string::npos;
      while (need == std::string::npos || request.size() < need) {
        const ssize_t n = recv(client, buffer, sizeof(buffer), 0);
        if (n <= 0) break;
        request.append(buffer, static_cast<size_t>(n));
        const size_t end = request.find("\r\n\r\n");
        if (need == std::string::npos && end != std::string::npos) {
          const size_t at = request.find("Content-Length: ");
          need = end + 4 + std::stoul(request.substr(at + 16));
        }
      }
      {
        std::lock_guard lock(mutex_);
        bodies_.push_back(request.substr(request.find("\r\n\r\n") + 4));
      }
      if (status_ == 0) {
        held_.push_back(client);  // never answered
        continue;
      }
      const std::string answer =
          "HTTP/1.1 " + std::to_string(status_) + " X\r\nContent-Length: 0\r\n\r\n";
      send(client, answer.data(), answer.size(), MSG_NOSIGNAL);
      close(client);
    }
  }

  const int status_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<std::string> bodies_;
  std::vector<int> held_;
  std::thread thread_;
};

std::shared_ptr<const Span> TestSpan(int i, int error_code = 0) {
  auto span = std::make_shared<Span>();
  span->kind = i % 2 == 0 ? SpanKind::kServer : SpanKind::kClient;
  span->method = "pkg.Service.Method";
  span->protocol = "baidu_std";
  span->peer = "127.0.0.1:1234";
  span->trace.trace_id_high = 0x0102030405060708;
  span->trace.trace_id = 0x1112131415161718;
  span->trace.span_id = static_cast<uint64_t>(i + 1);
  span->trace.parent_span_id = i == 0 ? 0 : 1;
  span->start_time = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
  span->latency = std::chrono::microseconds(250);
  span->phases[static_cast<size_t>(SpanPhase::kParsed)] = std::chrono::microseconds(10);
  span->memory_strategy = "reuse";
  span->message_bytes = 4096;
  span->message_bytes_source = "strategy";
  span->error_code = error_code;
  span->error_text = error_code != 0 ? "broke \"quoted\"" : "";
  span->annotations.push_back(SpanAnnotation{std::chrono::microseconds(20), "note"});
  return span;
}

OtlpExporterOptions Options(int port) {
  OtlpExporterOptions options;
  options.url = "http://127.0.0.1:" + std::to_string(port) + "/v1/traces";
  options.service_name = "unit";
  options.flush_interval = std::chrono::milliseconds(50);
  options.timeout = std::chrono::milliseconds(500);
  return options;
}

TEST(OtlpExporter, PostsBatchesOfOtlpJson) {
  Collector collector(200);
  std::string error;
  auto exporter = OtlpHttpExporter::Create(Options(collector.port()), &error);
  ASSERT_TRUE(exporter) << error;
  for (int i = 0; i < 3; ++i) exporter->Export(TestSpan(i, i == 2 ? 1234 : 0));
  exporter->Flush();
  EXPECT_EQ(3u, exporter->counts().exported);
  const std::vector<std::string> bodies = collector.bodies();
  ASSERT_EQ(1u, bodies.size());
  Struct body;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(bodies[0], &body).ok()) << bodies[0];
  const auto& resource = body.fields().at("resourceSpans").list_value().values(0).struct_value();
  const auto& attribute =
      resource.fields().at("resource").struct_value().fields().at("attributes").list_value()
          .values(0).struct_value().fields();
  EXPECT_EQ("service.name", attribute.at("key").string_value());
  EXPECT_EQ("unit", attribute.at("value").struct_value().fields().at("stringValue").string_value());
  const auto& spans = resource.fields().at("scopeSpans").list_value().values(0).struct_value()
                          .fields().at("spans").list_value();
  ASSERT_EQ(3, spans.values_size());
  const auto& first = spans.values(0).struct_value().fields();
  EXPECT_EQ("01020304050607081112131415161718", first.at("traceId").string_value());
  EXPECT_EQ("0000000000000001", first.at("spanId").string_value());
  EXPECT_EQ(0u, first.count("parentSpanId"));
  EXPECT_EQ("pkg.Service/Method", first.at("name").string_value());
  EXPECT_EQ(2, first.at("kind").number_value());  // server
  EXPECT_EQ("1800000000000000000", first.at("startTimeUnixNano").string_value());
  EXPECT_EQ("1800000000000250000", first.at("endTimeUnixNano").string_value());
  const auto& events = first.at("events").list_value();
  ASSERT_EQ(2, events.values_size());
  EXPECT_EQ("parsed", events.values(0).struct_value().fields().at("name").string_value());
  EXPECT_EQ("note", events.values(1).struct_value().fields().at("name").string_value());
  const auto& second = spans.values(1).struct_value().fields();
  EXPECT_EQ(3, second.at("kind").number_value());  // client
  EXPECT_EQ("0000000000000001", second.at("parentSpanId").string_value());
  const auto& failed = spans.values(2).struct_value().fields();
  EXPECT_EQ(2, failed.at("status").struct_value().fields().at("code").number_value());
  EXPECT_EQ("broke \"quoted\"",
            failed.at("status").struct_value().fields().at("message").string_value());
}

TEST(OtlpExporter, TheQueueIsBoundedAndAHangingCollectorCostsOnlyItsBatches) {
  Collector collector(0);  // never answers
  OtlpExporterOptions options = Options(collector.port());
  options.max_queued_spans = 10;
  options.max_batch_spans = 5;
  options.timeout = std::chrono::milliseconds(200);
  std::string error;
  auto exporter = OtlpHttpExporter::Create(options, &error);
  ASSERT_TRUE(exporter) << error;
  for (int i = 0; i < 100; ++i) exporter->Export(TestSpan(i));
  exporter->Flush();
  const OtlpHttpExporter::Counts counts = exporter->counts();
  EXPECT_EQ(0u, counts.exported);
  // Everything accounted for: each span was either dropped at the full queue or in a failed batch.
  EXPECT_EQ(100u, counts.dropped_queue_full + counts.dropped_failed);
  EXPECT_GE(counts.dropped_queue_full, 80u);
  EXPECT_GE(counts.failed_batches, 2u);
  EXPECT_NE(std::string::npos, exporter->last_error().find("timed out")) << exporter->last_error();
}

TEST(OtlpExporter, RefusalsAndAnAbsentCollectorAreCounted) {
  {
    Collector collector(400);
    std::string error;
    auto exporter = OtlpHttpExporter::Create(Options(collector.port()), &error);
    ASSERT_TRUE(exporter) << error;
    exporter->Export(TestSpan(0));
    exporter->Flush();
    EXPECT_EQ(1u, exporter->counts().dropped_failed);
    EXPECT_NE(std::string::npos, exporter->last_error().find("400")) << exporter->last_error();
  }
  int closed_port = 0;
  {
    Collector gone(200);
    closed_port = gone.port();
  }
  std::string error;
  auto exporter = OtlpHttpExporter::Create(Options(closed_port), &error);
  ASSERT_TRUE(exporter) << error;
  exporter->Export(TestSpan(0));
  exporter->Flush();
  EXPECT_EQ(1u, exporter->counts().failed_batches);
  EXPECT_NE(std::string::npos, exporter->last_error().find("connect")) << exporter->last_error();
}

TEST(OtlpExporter, RejectsUrlsItCannotPostTo) {
  for (const char* url : {"https://collector:4318/v1/traces", "collector:4318", "http://:4318/x",
                          "http://host:port/x"}) {
    OtlpExporterOptions options;
    options.url = url;
    std::string error;
    EXPECT_EQ(nullptr, OtlpHttpExporter::Create(options, &error)) << url;
    EXPECT_NE(std::string::npos, error.find("http://host:port/path")) << url;
  }
}

}  // namespace
}  // namespace arenarpc
