// HTTP/1.1 on the RPC port: JSON and binary calls of any method, keep-alive and pipelining,
// HTTP/1.0, Expect: 100-continue, errors as status + x-bd-error-* headers, built-in pages and
// their options, in every memory strategy.

#include <stdlib.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "echo/echo_service.h"
#include "echo/payload_generator.h"
#include "http_client.h"
#include "run_command.h"
#include "protocol/compression.h"
#include "server_fixture.h"

namespace arenarpc::e2e {
namespace {

constexpr std::string_view kEchoPath = "/arenarpc.e2e.TestService/Echo";


class HttpTest : public ServerTest {
 protected:
  HttpResponse Call(std::string_view request) {
    HttpClient client(port_);
    EXPECT_TRUE(client.connected());
    EXPECT_TRUE(client.Send(request));
    std::optional<HttpResponse> response = client.Read();
    EXPECT_TRUE(response.has_value());
    return response.value_or(HttpResponse{});
  }
  HttpResponse PostJson(std::string_view path, std::string_view json,
                        std::string_view extra_headers = {}) {
    return Call(HttpClient::Request("POST", path, json, "application/json", extra_headers));
  }
};
ARENARPC_ALL_MODES(HttpTest);

// The same handler gives the same JSON in every strategy: each mode checks the exact text, many
// times over (so that pooled and reused messages are what answers).
TEST_P(HttpTest, JsonCallReturnsTheResponseAsJson) {
  StartServer();
  HttpClient client(port_);
  ASSERT_TRUE(client.connected());
  for (int i = 0; i < 20; ++i) {
    const std::string items = i % 2 == 0 ? R"(["a","b"])" : R"(["c"])";
    ASSERT_TRUE(client.Send(HttpClient::Request(
        "POST", kEchoPath,
        R"({"message":"hi)" + std::to_string(i) + R"(","items":)" + items + "}")));
    std::optional<HttpResponse> response = client.Read();
    ASSERT_TRUE(response);
    EXPECT_EQ(200, response->status);
    EXPECT_EQ("application/json", response->Header("content-type"));
    EXPECT_EQ(
        R"({"message":"hi)" + std::to_string(i) + R"(","items":)" + items + R"(,"log_id":"0"})",
        response->body);
  }
  const MethodStats stats = server_->GetMethodStats("arenarpc.e2e.TestService.Echo");
  EXPECT_EQ(20u, stats.calls);
  EXPECT_EQ(0u, stats.errors);
  ExpectAllPairsReleased();
}

TEST_P(HttpTest, ShortServiceNameAndCamelCaseFieldsWork) {
  StartServer();
  const HttpResponse response =
      PostJson("/TestService/Echo2", R"({"message":"x","reportThread":false})");
  EXPECT_EQ(200, response.status) << response.body;
  EXPECT_EQ(R"({"message":"x","log_id":"0"})", response.body);
  EXPECT_EQ(1u, server_->GetMethodStats("arenarpc.e2e.TestService.Echo2").calls);
}

TEST_P(HttpTest, BinaryProtobufBodiesBothWays) {
  StartServer();
  TestRequest request;
  request.set_message("binary");
  request.add_items("i");
  for (std::string_view type : {"application/proto", "application/x-protobuf"}) {
    const HttpResponse response =
        Call(HttpClient::Request("POST", kEchoPath, request.SerializeAsString(), type));
    ASSERT_EQ(200, response.status) << response.body;
    EXPECT_EQ("application/proto", response.Header("content-type"));
    TestResponse reply;
    ASSERT_TRUE(reply.ParseFromString(response.body));
    EXPECT_EQ("binary", reply.message());
    ASSERT_EQ(1, reply.items_size());
  }
}

TEST_P(HttpTest, PipelinedRepliesComeInRequestOrder) {
  ServerOptions options;
  options.num_threads = 2;
  StartServer(options);
  HttpClient client(port_);
  ASSERT_TRUE(client.connected());
  // The first call finishes last (its reply is held back until it is written first).
  std::string batch =
      HttpClient::Request("POST", kEchoPath, R"({"message":"slow","delay_ms":150})") +
      HttpClient::Request("POST", kEchoPath, R"({"message":"fast","async":true})") +
      HttpClient::Request("GET", "/health") +
      HttpClient::Request("POST", kEchoPath, R"({"message":"last"})");
  ASSERT_TRUE(client.Send(batch));
  const char* expected[] = {"slow", "fast", nullptr, "last"};
  for (const char* message : expected) {
    std::optional<HttpResponse> response = client.Read();
    ASSERT_TRUE(response);
    ASSERT_EQ(200, response->status) << response->body;
    if (message == nullptr) {
      EXPECT_EQ("OK\n", response->body);
    } else {
      EXPECT_NE(std::string::npos, response->body.find(std::string("\"") + message + "\""))
          << response->body;
    }
  }
  // Keep-alive: the connection serves more requests afterwards.
  ASSERT_TRUE(client.Send(HttpClient::Request("POST", kEchoPath, R"({"message":"again"})")));
  std::optional<HttpResponse> again = client.Read();
  ASSERT_TRUE(again);
  EXPECT_EQ(200, again->status);
}

TEST_P(HttpTest, Http10AndConnectionCloseCloseAfterTheReply) {
  StartServer();
  {
    HttpClient client(port_);
    ASSERT_TRUE(client.Send("GET /health HTTP/1.0\r\n\r\n"));
    std::optional<HttpResponse> response = client.Read();
    ASSERT_TRUE(response);
    EXPECT_EQ("HTTP/1.0", response->version);
    EXPECT_EQ(200, response->status);
    EXPECT_TRUE(client.WaitClosed());
  }
  {
    HttpClient client(port_);
    ASSERT_TRUE(client.Send(HttpClient::Request("POST", kEchoPath, R"({"message":"bye"})",
                                                "application/json", "Connection: close\r\n") +
                            HttpClient::Request("GET", "/health")));  // never answered
    std::optional<HttpResponse> response = client.Read();
    ASSERT_TRUE(response);
    EXPECT_EQ(200, response->status);
    EXPECT_EQ("close", response->Header("connection"));
    EXPECT_TRUE(client.WaitClosed());
  }
  {
    HttpClient client(port_);
    ASSERT_TRUE(client.Send("GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    std::optional<HttpResponse> response = client.Read();
    ASSERT_TRUE(response);
    EXPECT_EQ("keep-alive", response->Header("connection"));
    ASSERT_TRUE(client.Send("GET /version HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    response = client.Read();
    ASSERT_TRUE(response);
    EXPECT_EQ(200, response->status);
  }
}

TEST_P(HttpTest, ExpectContinueIsAnsweredBeforeTheBody) {
  StartServer();
  HttpClient client(port_);
  const std::string body = R"({"message":"continued"})";
  ASSERT_TRUE(
      client.Send("POST /arenarpc.e2e.TestService/Echo HTTP/1.1\r\nExpect: 100-continue\r\n"
                  "Content-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n"));
  std::optional<HttpResponse> interim = client.Read();
  ASSERT_TRUE(interim);
  EXPECT_EQ(100, interim->status);
  ASSERT_TRUE(client.Send(body));
  std::optional<HttpResponse> response = client.Read();
  ASSERT_TRUE(response);
  EXPECT_EQ(200, response->status);
  EXPECT_NE(std::string::npos, response->body.find("continued"));
}

TEST_P(HttpTest, ErrorsMapToStatusAndBrpcHeaders) {
  StartServer();
  struct Case {
    std::string request;
    int status;
    std::string code;  // x-bd-error-code, empty: none
    std::string text;  // in x-bd-error-message and the body
  };
  const std::vector<Case> cases = {
      {HttpClient::Request("POST", "/arenarpc.e2e.TestService/Nope", "{}"), 404, "1002", "Nope"},
      {HttpClient::Request("POST", "/NoSuch/Echo", "{}"), 404, "1001", "NoSuch"},
      {HttpClient::Request("POST", "/no.Such/Echo", "{}"), 404, "1002", "no.Such"},
      {HttpClient::Request("POST", kEchoPath, R"({"message":1x})"), 400, "1003", "invalid JSON"},
      {HttpClient::Request("POST", kEchoPath, R"({"items":["a"]})"), 400, "1003", "message"},
      {HttpClient::Request("POST", kEchoPath, "\x01\x02", "application/proto"), 400, "1003", ""},
      {HttpClient::Request("POST", kEchoPath,
                           R"({"message":"m","fail_code":2004,"fail_text":"busy"})"),
       503, "2004", "busy"},
      {HttpClient::Request("POST", kEchoPath,
                           R"({"message":"m","fail_code":-1,"fail_text":"oops"})"),
       500, "2001", "oops"},
      {HttpClient::Request("POST", kEchoPath, R"({"message":"m","omit_required":true})"), 500,
       "2002", "message"},
      {HttpClient::Request("POST", kEchoPath, R"({"message":"m"})", "application/json",
                           "x-bd-timeout-ms: soon\r\n"),
       400, "1003", "x-bd-timeout-ms"},
      {HttpClient::Request("GET", kEchoPath), 405, "", "POST"},
      {HttpClient::Request("GET", "/nothing/here/at/all"), 404, "", "/nothing/here/at/all"},
  };
  for (const Case& c : cases) {
    const HttpResponse response = Call(c.request);
    EXPECT_EQ(c.status, response.status) << c.request << "\n" << response.body;
    EXPECT_EQ(c.code, response.Header("x-bd-error-code")) << c.request;
    EXPECT_NE(std::string::npos, response.body.find(c.text)) << c.request << "\n" << response.body;
    if (!c.code.empty()) {
      EXPECT_NE(std::string::npos, response.Header("x-bd-error-message").find(c.text)) << c.request;
    }
  }
  ExpectAllPairsReleased();
}

TEST_P(HttpTest, LimitsAndDeadlinesApplyAsForBaiduStd) {
  ServerOptions options;
  options.num_threads = 1;
  options.worker_threads = 1;
  options.max_concurrency = 2;
  StartServer(options);
  // The only worker is blocked: a call whose x-bd-timeout-ms passes while it waits gets 504,
  // and a third call is over max_concurrency: 503 ELIMIT.
  HttpClient blocker(port_);
  ASSERT_TRUE(
      blocker.Send(HttpClient::Request("POST", kEchoPath, R"({"message":"b","block_ms":300})")));
  ASSERT_TRUE(WaitForInFlight(1));
  HttpClient late(port_);
  ASSERT_TRUE(late.Send(HttpClient::Request("POST", kEchoPath, R"({"message":"l"})",
                                            "application/json", "x-bd-timeout-ms: 50\r\n")));
  ASSERT_TRUE(WaitForInFlight(2));
  const HttpResponse limited = PostJson(kEchoPath, R"({"message":"x"})");
  EXPECT_EQ(503, limited.status);
  EXPECT_EQ("2004", limited.Header("x-bd-error-code"));
  std::optional<HttpResponse> timed_out = late.Read();
  ASSERT_TRUE(timed_out);
  EXPECT_EQ(504, timed_out->status) << timed_out->body;
  EXPECT_EQ("1008", timed_out->Header("x-bd-error-code"));
  std::optional<HttpResponse> blocked = blocker.Read();
  ASSERT_TRUE(blocked);
  EXPECT_EQ(200, blocked->status);
  EXPECT_EQ(1u, server_->GetServerStats().rejected_timed_out);
}

TEST_P(HttpTest, BuiltinPages) {
  StartServer();
  const HttpResponse health = Call(HttpClient::Request("GET", "/health"));
  EXPECT_EQ(200, health.status);
  EXPECT_EQ("OK\n", health.body);
  const HttpResponse health_json = Call(HttpClient::Request("GET", "/health?format=json"));
  EXPECT_EQ("application/json", health_json.Header("content-type"));
  EXPECT_EQ(R"({"status":"OK"})", health_json.body);
  const HttpResponse version = Call(HttpClient::Request("GET", "/version"));
  EXPECT_EQ(200, version.status);
  EXPECT_EQ(0u, version.body.find("arenarpc "));
  const HttpResponse index = Call(HttpClient::Request("GET", "/"));
  EXPECT_NE(std::string::npos, index.body.find("/health"));
  EXPECT_NE(std::string::npos, index.body.find("/version"));
  const HttpResponse index_json = Call(HttpClient::Request("GET", "/?format=json"));
  EXPECT_EQ(0u, index_json.body.find(R"([{"path":"/")")) << index_json.body;
  HttpClient client(port_);
  ASSERT_TRUE(client.Send("HEAD /health HTTP/1.1\r\n\r\nGET /health HTTP/1.1\r\n\r\n"));
  std::optional<HttpResponse> head = client.Read(std::chrono::seconds(10), /*has_body=*/false);
  ASSERT_TRUE(head);
  EXPECT_EQ(200, head->status);
  EXPECT_EQ("3", head->Header("content-length"));
  std::optional<HttpResponse> get = client.Read();  // no body came between the two
  ASSERT_TRUE(get);
  EXPECT_EQ("OK\n", get->body);
}

// Real components: /usr/bin/curl calls a method with JSON and reads /health and /status?format=json.
TEST_P(HttpTest, CurlCallsAMethodWithJson) {
  StartServer();
  ASSERT_EQ(0, access("/usr/bin/curl", X_OK))
      << "curl is a test dependency (scripts/install_deps.sh)";
  const std::string base = "http://127.0.0.1:" + std::to_string(port_);
  EXPECT_EQ(R"({"message":"from curl","items":["x"],"log_id":"0"})",
            RunCommand("/usr/bin/curl -sS --max-time 10 -H 'Content-Type: application/json' -d "
                "'{\"message\":\"from curl\",\"items\":[\"x\"]}' " +
                base + "/arenarpc.e2e.TestService/Echo"));
  EXPECT_EQ("OK\n", RunCommand("/usr/bin/curl -sS --max-time 10 " + base + "/health"));
  // /status as JSON: the call above is there, counted once.
  google::protobuf::Struct status;
  const std::string status_json =
      RunCommand("/usr/bin/curl -sS --max-time 10 '" + base + "/status?format=json'");
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(status_json, &status).ok()) << status_json;
  double echo_calls = -1;
  for (const auto& method : status.fields().at("methods").list_value().values()) {
    const auto& fields = method.struct_value().fields();
    if (fields.at("name").string_value() == "arenarpc.e2e.TestService.Echo") {
      echo_calls = fields.at("calls").number_value();
    }
  }
  EXPECT_EQ(1, echo_calls) << status_json;
  EXPECT_EQ("404 1002",
            RunCommand("/usr/bin/curl -sS --max-time 10 -o /dev/null -D - -d '{}' " + base +
                "/TestService/Nope | awk 'NR==1{s=$2} tolower($1)==\"x-bd-error-code:\"{c=$2} "
                "END{gsub(/\\r/,\"\",c); printf \"%s %s\", s, c}'"));
}

// Compressed request bodies (brpc's request_compress_type over HTTP): curl sends a gzip body and
// asks for a gzip reply; deflate (zlib) bodies; a body that would inflate past max_body_size and
// an encoding the server does not know are 400.
TEST_P(HttpTest, CompressedRequestBodiesAndGzipReplies) {
  ServerOptions options;
  options.max_body_size = 1u << 20;
  StartServer(options);
  ASSERT_EQ(0, access("/usr/bin/curl", X_OK)) << "curl is a test dependency";
  char dir_template[] = "/tmp/arenarpc_gzip_XXXXXX";
  const char* dir = mkdtemp(dir_template);
  ASSERT_NE(nullptr, dir);
  const std::string body_path = std::string(dir) + "/body.json";
  {
    FILE* f = std::fopen(body_path.c_str(), "w");
    ASSERT_NE(nullptr, f);
    std::fputs(R"({"message":"zipped","items":["a","b"],"response_compress":2})", f);
    std::fclose(f);
  }
  RunCommand("/usr/bin/gzip -c " + body_path + " > " + body_path + ".gz");
  const std::string url =
      "http://127.0.0.1:" + std::to_string(port_) + "/arenarpc.e2e.TestService/Echo";
  const std::string expected = R"({"message":"zipped","items":["a","b"],"log_id":"0"})";
  const std::string curl = "/usr/bin/curl -sS --max-time 10 -H 'Content-Type: application/json' "
                           "-H 'Content-Encoding: gzip' --data-binary @" + body_path + ".gz ";
  EXPECT_EQ(expected, RunCommand(curl + url));                  // no Accept-Encoding: plain reply
  EXPECT_EQ(expected, RunCommand(curl + "--compressed " + url));  // gzip reply, inflated by curl
  const std::string headers = RunCommand(curl + "--compressed -o /dev/null -D - " + url);
  EXPECT_NE(std::string::npos, headers.find("Content-Encoding: gzip")) << headers;
  RunCommand("rm -rf " + std::string(dir));

  auto post = [&](int compress_type, std::string_view encoding, std::string_view json) {
    net::BufferChain plain, packed;
    plain.Append(json);
    std::string error;
    EXPECT_TRUE(protocol::Compress(compress_type, plain, &packed, &error)) << error;
    return PostJson(kEchoPath, packed.ToString(),
                    "Content-Encoding: " + std::string(encoding) + "\r\n");
  };
  HttpResponse deflated = post(3, "deflate", R"({"message":"deflated"})");
  EXPECT_EQ(200, deflated.status) << deflated.body;
  EXPECT_EQ(R"({"message":"deflated","log_id":"0"})", deflated.body);
  // 8 MiB of JSON whitespace gzip to a few KB: past max_body_size = 1 MiB once inflated.
  HttpResponse bomb =
      post(2, "gzip", std::string(8u << 20, ' ') + R"({"message":"bomb"})");
  EXPECT_EQ(400, bomb.status);
  EXPECT_NE(std::string::npos, bomb.body.find("does not inflate within max_body_size=1048576"))
      << bomb.body;
  HttpResponse unknown =
      PostJson(kEchoPath, R"({"message":"x"})", "Content-Encoding: br\r\n");
  EXPECT_EQ(400, unknown.status);
  EXPECT_NE(std::string::npos, unknown.body.find("Content-Encoding: br is not supported"));
}

}  // namespace
}  // namespace arenarpc::e2e

namespace arenarpc::e2e {
namespace {

// The echo workload's payloads (trees of repeated messages and bytes) over HTTP+JSON: every
// strategy answers each request with the same JSON, the request's own payload — also once the
// reuse strategy's pooled trees are shaped by earlier, different calls.
TEST(HttpJsonModesTest, EveryStrategyReturnsTheSameJsonForTheEchoWorkload) {
  std::vector<std::string> requests;
  example::PayloadGenerator generator(2, 99);
  for (int i = 0; i < 30; ++i) {
    example::EchoRequest request;
    generator.Fill(&request);
    std::string json;
    ASSERT_TRUE(google::protobuf::util::MessageToJsonString(request, &json).ok());
    requests.push_back(std::move(json));
  }
  std::vector<std::string> heap_replies;
  for (const char* mode : kAllModes) {
    example::EchoServiceImpl service;
    Server server;
    ASSERT_EQ(0, server.AddService(&service, SERVER_DOESNT_OWN_SERVICE));
    ServerOptions options;
    options.memory_mode = mode;
    options.num_threads = 1;
    ASSERT_EQ(0, server.Start("127.0.0.1:0", options)) << server.last_error();
    HttpClient client(server.listen_port());
    std::vector<std::string> replies;
    for (const std::string& body : requests) {
      ASSERT_TRUE(client.Send(
          HttpClient::Request("POST", "/arenarpc.example.EchoService/Echo", body)));
      std::optional<HttpResponse> response = client.Read();
      ASSERT_TRUE(response) << mode;
      ASSERT_EQ(200, response->status) << mode << ": " << response->body;
      replies.push_back(response->body);
    }
    if (heap_replies.empty()) {
      heap_replies = replies;
      for (size_t i = 0; i < requests.size(); ++i) {
        example::EchoRequest sent, echoed;
        ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(requests[i], &sent).ok());
        ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(replies[i], &echoed).ok());
        EXPECT_EQ(sent.payload().SerializeAsString(), echoed.payload().SerializeAsString());
      }
    } else {
      for (size_t i = 0; i < replies.size(); ++i) {
        EXPECT_EQ(heap_replies[i], replies[i]) << mode << " call " << i;
      }
    }
    EXPECT_EQ(requests.size(), server.GetMethodStats("arenarpc.example.EchoService.Echo").calls);
  }
}

}  // namespace
}  // namespace arenarpc::e2e
