// Browsers' protocols on the RPC port over HTTP/1.1 (docs/http.md, "Browsers: grpc-web and
// Connect"): grpc-web (binary and base64 text) and Connect unary calls (JSON and protobuf), their
// errors, deadlines and metadata, CORS preflights, server streaming (grpc-web, grpc-web-text,
// Connect JSON and binary), curl as a real client, and hostile input (base64 garbage, envelope
// length lies, bodies past max_body_size, a streaming client that never reads) next to a good
// client — in every memory strategy.

#include <atomic>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "http_client.h"
#include "run_command.h"
#include "server_fixture.h"
#include "stream_unary.h"
#include "util/base64.h"

namespace arenarpc::e2e {
namespace {

constexpr std::string_view kEchoPath = "/arenarpc.e2e.TestService/Echo";

std::string Frame(uint8_t flag, std::string_view payload) {
  std::string out(5, '\0');
  out[0] = static_cast<char>(flag);
  const auto n = static_cast<uint32_t>(payload.size());
  out[1] = static_cast<char>(n >> 24);
  out[2] = static_cast<char>(n >> 16);
  out[3] = static_cast<char>(n >> 8);
  out[4] = static_cast<char>(n);
  return out + std::string(payload);
}

std::string EchoRequestBytes(const std::string& message, int fail_code = 0,
                             const std::string& fail_text = {}, int delay_ms = 0) {
  TestRequest request;
  request.set_message(message);
  if (fail_code != 0) request.set_fail_code(fail_code);
  if (!fail_text.empty()) request.set_fail_text(fail_text);
  if (delay_ms > 0) request.set_delay_ms(delay_ms);
  return request.SerializeAsString();
}

// A streaming body (grpc-web's, Connect's) split into its envelopes: the messages, then the
// last frame (grpc-web's trailers, flag 0x80; Connect's end of stream, flag 2).
struct StreamBody {
  std::vector<std::string> messages;
  std::string last;
  bool well_formed = false;  // the last frame came, and nothing after it
};

StreamBody ParseEnvelopes(std::string_view body, uint8_t last_flag) {
  StreamBody out;
  while (body.size() >= 5) {
    const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(body[i])); };
    const uint32_t length = (byte(1) << 24) | (byte(2) << 16) | (byte(3) << 8) | byte(4);
    if (body.size() - 5 < length) return out;
    const std::string_view payload = body.substr(5, length);
    if (byte(0) & last_flag) {
      out.last = payload;
      out.well_formed = body.size() == 5 + length;
      return out;
    }
    out.messages.emplace_back(payload);
    body.remove_prefix(5 + length);
  }
  return out;
}

// A grpc-web reply body, split into its frames.
struct GrpcWebReply {
  std::vector<std::string> messages;
  std::string trailers;  // "grpc-status:0\r\n..."
  bool well_formed = false;
};

GrpcWebReply ParseGrpcWeb(std::string_view body) {
  StreamBody frames = ParseEnvelopes(body, 0x80);
  return {std::move(frames.messages), std::move(frames.last), frames.well_formed};
}

class WebRpcTest : public ServerTest {
 protected:
  HttpResponse Call(std::string_view request) {
    HttpClient client(port_);
    EXPECT_TRUE(client.connected());
    EXPECT_TRUE(client.Send(request));
    std::optional<HttpResponse> response = client.Read();
    EXPECT_TRUE(response.has_value());
    return response.value_or(HttpResponse{});
  }
  HttpResponse GrpcWeb(std::string_view body, std::string_view type = "application/grpc-web+proto",
                       std::string_view extra_headers = {}) {
    return Call(HttpClient::Request("POST", kEchoPath, body, type,
                                    "X-Grpc-Web: 1\r\n" + std::string(extra_headers)));
  }
  HttpResponse Connect(std::string_view body, std::string_view type,
                       std::string_view extra_headers = {}, std::string_view path = kEchoPath) {
    return Call(HttpClient::Request("POST", path, body, type,
                                    "Connect-Protocol-Version: 1\r\n" + std::string(extra_headers)));
  }
};
ARENARPC_ALL_MODES(WebRpcTest);

TEST_P(WebRpcTest, GrpcWebBinaryUnaryWithMetadata) {
  StartServer();
  for (const char* type : {"application/grpc-web", "application/grpc-web+proto"}) {
    const HttpResponse response =
        GrpcWeb(Frame(0, EchoRequestBytes("hello")), type, "x-user: v1\r\n");
    ASSERT_EQ(200, response.status) << response.body;
    EXPECT_EQ("application/grpc-web+proto", response.Header("content-type"));
    EXPECT_EQ("v1-back", response.Header("x-user")) << "metadata both ways";
    const GrpcWebReply reply = ParseGrpcWeb(response.body);
    ASSERT_TRUE(reply.well_formed) << response.body;
    ASSERT_EQ(1u, reply.messages.size());
    TestResponse echoed;
    ASSERT_TRUE(echoed.ParseFromString(reply.messages[0]));
    EXPECT_EQ("hello", echoed.message());
    EXPECT_EQ("grpc-status:0\r\n", reply.trailers);
  }
  const MethodStats stats = server_->GetMethodStats("arenarpc.e2e.TestService.Echo");
  EXPECT_EQ(2u, stats.calls);
  EXPECT_EQ(0u, stats.errors);
  ExpectAllPairsReleased();
}

// grpc-web-text: the request base64 in two chunks encoded apart (padding inside, as a browser's
// grpc-web client may send), the reply base64.
TEST_P(WebRpcTest, GrpcWebTextUnary) {
  StartServer();
  const std::string framed = Frame(0, EchoRequestBytes("text mode"));
  const std::string body = util::EncodeBase64(framed.substr(0, 4), true) +
                           util::EncodeBase64(framed.substr(4), true);
  ASSERT_NE(std::string::npos, body.find('=')) << "the first chunk is padded";
  const HttpResponse response = GrpcWeb(body, "application/grpc-web-text");
  ASSERT_EQ(200, response.status) << response.body;
  EXPECT_EQ("application/grpc-web-text+proto", response.Header("content-type"));
  std::string decoded = response.body;
  size_t bad_at = 0;
  ASSERT_TRUE(util::DecodeBase64InPlace(&decoded, &bad_at)) << response.body;
  const GrpcWebReply reply = ParseGrpcWeb(decoded);
  ASSERT_TRUE(reply.well_formed);
  ASSERT_EQ(1u, reply.messages.size());
  TestResponse echoed;
  ASSERT_TRUE(echoed.ParseFromString(reply.messages[0]));
  EXPECT_EQ("text mode", echoed.message());
  EXPECT_EQ("grpc-status:0\r\n", reply.trailers);
  ExpectAllPairsReleased();
}

TEST_P(WebRpcTest, GrpcWebErrorsAreTrailers) {
  StartServer();
  struct Case {
    std::string body;
    std::string type;
    std::string path;
    std::string trailers_start;  // grpc-status and the start of grpc-message
  };
  const std::string ok_body = Frame(0, EchoRequestBytes("m"));
  const std::vector<Case> cases = {
      {Frame(0, EchoRequestBytes("m", -1, "oops 100%")), "application/grpc-web", std::string(kEchoPath),
       "grpc-status:13\r\ngrpc-message:oops 100%25\r\n"},
      {Frame(0, EchoRequestBytes("m", 2004, "busy")), "application/grpc-web", std::string(kEchoPath),
       "grpc-status:14\r\ngrpc-message:busy"},
      {ok_body, "application/grpc-web", "/arenarpc.e2e.TestService/Nope",
       "grpc-status:12\r\ngrpc-message:Method not found: arenarpc.e2e.TestService/Nope"},
      {ok_body.substr(0, 3), "application/grpc-web", std::string(kEchoPath),
       "grpc-status:3\r\ngrpc-message:request body of 3 bytes"},
      // The envelope claims more than the body holds, and less.
      {ok_body + "xx", "application/grpc-web", std::string(kEchoPath),
       "grpc-status:3\r\ngrpc-message:request envelope says"},
      {ok_body.substr(0, ok_body.size() - 1), "application/grpc-web", std::string(kEchoPath),
       "grpc-status:3\r\ngrpc-message:request envelope says"},
      {Frame(1, "zz"), "application/grpc-web", std::string(kEchoPath),
       "grpc-status:3\r\ngrpc-message:compressed message with grpc-encoding ''"},
      {Frame(0x80, "grpc-status:0\r\n"), "application/grpc-web", std::string(kEchoPath),
       "grpc-status:3\r\ngrpc-message:request envelope flag 128"},
      {ok_body, "application/grpc-web+json", std::string(kEchoPath),
       "grpc-status:3\r\ngrpc-message:Content-Type application/grpc-web+json is not served"},
  };
  for (const Case& c : cases) {
    const HttpResponse response =
        Call(HttpClient::Request("POST", c.path, c.body, c.type, "X-Grpc-Web: 1\r\n"));
    EXPECT_EQ(200, response.status) << c.trailers_start;
    const GrpcWebReply reply = ParseGrpcWeb(response.body);
    EXPECT_TRUE(reply.well_formed) << c.trailers_start;
    EXPECT_TRUE(reply.messages.empty()) << c.trailers_start;
    EXPECT_EQ(0u, reply.trailers.find(c.trailers_start)) << reply.trailers;
  }
  const HttpResponse bad_timeout =
      GrpcWeb(ok_body, "application/grpc-web", "grpc-timeout: soon\r\n");
  EXPECT_EQ(0u, ParseGrpcWeb(bad_timeout.body)
                    .trailers.find("grpc-status:3\r\ngrpc-message:grpc-timeout: 'soon'"))
      << bad_timeout.body;
  ExpectAllPairsReleased();
}

TEST_P(WebRpcTest, ConnectUnaryJsonAndProto) {
  StartServer();
  const HttpResponse json =
      Connect(R"({"message":"json","items":["a"]})", "application/json", "x-user: u\r\n");
  ASSERT_EQ(200, json.status) << json.body;
  EXPECT_EQ("application/json", json.Header("content-type"));
  EXPECT_EQ(R"({"message":"json","items":["a"],"log_id":"0"})", json.body);
  EXPECT_EQ("u-back", json.Header("x-user"));
  const HttpResponse proto = Connect(EchoRequestBytes("proto"), "application/proto");
  ASSERT_EQ(200, proto.status) << proto.body;
  EXPECT_EQ("application/proto", proto.Header("content-type"));
  TestResponse echoed;
  ASSERT_TRUE(echoed.ParseFromString(proto.body));
  EXPECT_EQ("proto", echoed.message());
  ExpectAllPairsReleased();
}

// Connect's errors: the HTTP status of the code, the code as a string in a JSON body.
TEST_P(WebRpcTest, ConnectErrorsAreJson) {
  StartServer();
  struct Case {
    std::string body;
    std::string type;
    std::string headers;
    std::string path;
    int status;
    std::string json_start;
  };
  const std::vector<Case> cases = {
      {R"({"message":"m","fail_code":-1,"fail_text":"oops"})", "application/json", "",
       std::string(kEchoPath), 500, R"({"code":"internal","message":"oops"})"},
      {R"({"message":"m","fail_code":2004,"fail_text":"busy"})", "application/json", "",
       std::string(kEchoPath), 503, R"({"code":"unavailable","message":"busy"})"},
      {R"({"message":"m","fail_code":1004,"fail_text":"who"})", "application/json", "",
       std::string(kEchoPath), 401, R"({"code":"unauthenticated","message":"who"})"},
      {"{}", "application/json", "", "/arenarpc.e2e.TestService/Nope", 501,
       R"({"code":"unimplemented","message":"Method not found: arenarpc.e2e.TestService/Nope"})"},
      {R"({"message":1x})", "application/json", "", std::string(kEchoPath), 400,
       R"({"code":"invalid_argument","message":")"},
      {"\x01\x02", "application/proto", "", std::string(kEchoPath), 400,
       R"({"code":"invalid_argument")"},
      {R"({"message":"m"})", "application/json", "Connect-Timeout-Ms: soon\r\n",
       std::string(kEchoPath), 400, R"({"code":"invalid_argument","message":"connect-timeout-ms)"},
  };
  for (const Case& c : cases) {
    const HttpResponse response = Connect(c.body, c.type, c.headers, c.path);
    EXPECT_EQ(c.status, response.status) << c.json_start << "\n" << response.body;
    EXPECT_EQ("application/json", response.Header("content-type")) << c.json_start;
    EXPECT_EQ(0u, response.body.find(c.json_start)) << response.body;
    EXPECT_EQ("", response.Header("x-bd-error-code")) << "Connect's form, not brpc's";
  }
  ExpectAllPairsReleased();
}

// grpc-timeout (grpc-web) and Connect-Timeout-Ms are the calls' deadlines: a call whose deadline
// passes while it waits for the only worker is answered DEADLINE_EXCEEDED / deadline_exceeded.
TEST_P(WebRpcTest, DeadlinesFromGrpcTimeoutAndConnectTimeoutMs) {
  ServerOptions options;
  options.num_threads = 1;
  options.worker_threads = 1;
  StartServer(options);
  HttpClient blocker(port_);
  ASSERT_TRUE(blocker.Send(
      HttpClient::Request("POST", kEchoPath, R"({"message":"b","block_ms":300})")));
  ASSERT_TRUE(WaitForInFlight(1));
  HttpClient grpc_web(port_), connect(port_);
  ASSERT_TRUE(grpc_web.Send(HttpClient::Request("POST", kEchoPath, Frame(0, EchoRequestBytes("g")),
                                                "application/grpc-web", "grpc-timeout: 50m\r\n")));
  ASSERT_TRUE(connect.Send(HttpClient::Request(
      "POST", kEchoPath, R"({"message":"c"})", "application/json",
      "Connect-Protocol-Version: 1\r\nConnect-Timeout-Ms: 50\r\n")));
  std::optional<HttpResponse> web_late = grpc_web.Read();
  ASSERT_TRUE(web_late);
  EXPECT_EQ(0u, ParseGrpcWeb(web_late->body).trailers.find("grpc-status:4\r\n"))
      << web_late->body;
  std::optional<HttpResponse> connect_late = connect.Read();
  ASSERT_TRUE(connect_late);
  EXPECT_EQ(504, connect_late->status);
  EXPECT_EQ(0u, connect_late->body.find(R"({"code":"deadline_exceeded")")) << connect_late->body;
  std::optional<HttpResponse> blocked = blocker.Read();
  ASSERT_TRUE(blocked);
  EXPECT_EQ(200, blocked->status);
  EXPECT_EQ(2u, server_->GetServerStats().rejected_timed_out);
}

TEST_P(WebRpcTest, CorsPreflightAndReplies) {
  ServerOptions options;
  options.cors_allowed_origins = {"http://app.test:8080"};
  options.cors_allowed_headers = {"x-user"};
  options.cors_max_age = std::chrono::seconds(600);
  StartServer(options);
  const std::string preflight_head =
      "OPTIONS /arenarpc.e2e.TestService/Echo HTTP/1.1\r\nHost: x\r\n"
      "Access-Control-Request-Method: POST\r\n"
      "Access-Control-Request-Headers: content-type,x-grpc-web,x-user\r\n";
  const HttpResponse allowed = Call(preflight_head + "Origin: http://app.test:8080\r\n\r\n");
  EXPECT_EQ(204, allowed.status);
  EXPECT_EQ("http://app.test:8080", allowed.Header("access-control-allow-origin"));
  EXPECT_NE(std::string::npos, allowed.Header("access-control-allow-methods").find("POST"));
  const std::string allowed_headers = allowed.Header("access-control-allow-headers");
  for (const char* name : {"Content-Type", "X-Grpc-Web", "Connect-Protocol-Version",
                           "Connect-Timeout-Ms", "Grpc-Timeout", "x-user"}) {
    EXPECT_NE(std::string::npos, allowed_headers.find(name)) << name << ": " << allowed_headers;
  }
  EXPECT_EQ("600", allowed.Header("access-control-max-age"));
  const HttpResponse refused = Call(preflight_head + "Origin: http://evil.test\r\n\r\n");
  EXPECT_EQ(403, refused.status);
  EXPECT_EQ("", refused.Header("access-control-allow-origin"));
  // The calls themselves: the allowed origin is named and grpc-status exposed; another gets none.
  const HttpResponse call = GrpcWeb(Frame(0, EchoRequestBytes("c")), "application/grpc-web",
                                    "Origin: http://app.test:8080\r\n");
  EXPECT_EQ("http://app.test:8080", call.Header("access-control-allow-origin"));
  EXPECT_NE(std::string::npos, call.Header("access-control-expose-headers").find("Grpc-Status"));
  const HttpResponse error = Connect("{}", "application/json", "Origin: http://app.test:8080\r\n",
                                     "/arenarpc.e2e.TestService/Nope");
  EXPECT_EQ(501, error.status);
  EXPECT_EQ("http://app.test:8080", error.Header("access-control-allow-origin"));
  const HttpResponse other = GrpcWeb(Frame(0, EchoRequestBytes("c")), "application/grpc-web",
                                     "Origin: http://evil.test\r\n");
  EXPECT_EQ(200, other.status);
  EXPECT_EQ("", other.Header("access-control-allow-origin"));
}

// "*" allows any origin, and says so: Access-Control-Allow-Origin: *.
TEST_P(WebRpcTest, CorsAnyOrigin) {
  ServerOptions options;
  options.cors_allowed_origins = {"*"};
  StartServer(options);
  const HttpResponse preflight =
      Call("OPTIONS /arenarpc.e2e.TestService/Echo HTTP/1.1\r\nHost: x\r\n"
           "Origin: http://anywhere.test\r\nAccess-Control-Request-Method: POST\r\n\r\n");
  EXPECT_EQ(204, preflight.status);
  EXPECT_EQ("*", preflight.Header("access-control-allow-origin"));
  const HttpResponse call = GrpcWeb(Frame(0, EchoRequestBytes("any")), "application/grpc-web",
                                    "Origin: http://anywhere.test\r\n");
  EXPECT_EQ("*", call.Header("access-control-allow-origin"));
  EXPECT_EQ(1u, ParseGrpcWeb(call.body).messages.size());
}

// Without cors_allowed_origins a preflight is not answered as one (the browser refuses the call).
TEST_P(WebRpcTest, NoCorsByDefault) {
  StartServer();
  const HttpResponse preflight =
      Call("OPTIONS /arenarpc.e2e.TestService/Echo HTTP/1.1\r\nHost: x\r\n"
           "Origin: http://app.test\r\nAccess-Control-Request-Method: POST\r\n\r\n");
  EXPECT_EQ("", preflight.Header("access-control-allow-origin"));
  EXPECT_NE(204, preflight.status);
}

// Real client: curl on the Connect path (JSON, and its error JSON) and with grpc-web-text.
TEST_P(WebRpcTest, CurlConnectJsonAndGrpcWebText) {
  StartServer();
  ASSERT_EQ(0, access("/usr/bin/curl", X_OK)) << "curl is a test dependency";
  const std::string url = "http://127.0.0.1:" + std::to_string(port_);
  const std::string curl = "/usr/bin/curl -sS --max-time 10 -H 'Connect-Protocol-Version: 1' ";
  EXPECT_EQ(R"({"message":"from curl","log_id":"0"})",
            RunCommand(curl + "-H 'Content-Type: application/json' -d '{\"message\":\"from curl\"}' " +
                       url + "/arenarpc.e2e.TestService/Echo"));
  const std::string not_found =
      RunCommand(curl + "-H 'Content-Type: application/json' -d '{}' -w '\\n%{http_code}' " +
                 url + "/NoSuch/Echo");
  EXPECT_EQ(0u, not_found.find(R"({"code":"unimplemented","message":"Method not found: )"))
      << not_found;
  EXPECT_EQ("\n501", not_found.substr(not_found.size() - 4)) << not_found;
  const std::string text_body =
      util::EncodeBase64(Frame(0, EchoRequestBytes("curl text")), true);
  std::string reply = RunCommand("/usr/bin/curl -sS --max-time 10 -H 'Content-Type: "
                                 "application/grpc-web-text' -H 'X-Grpc-Web: 1' --data-binary '" +
                                 text_body + "' " + url + "/arenarpc.e2e.TestService/Echo");
  size_t bad_at = 0;
  ASSERT_TRUE(util::DecodeBase64InPlace(&reply, &bad_at)) << reply;
  const GrpcWebReply parsed = ParseGrpcWeb(reply);
  ASSERT_EQ(1u, parsed.messages.size()) << reply;
  TestResponse echoed;
  ASSERT_TRUE(echoed.ParseFromString(parsed.messages[0]));
  EXPECT_EQ("curl text", echoed.message());
  EXPECT_EQ("grpc-status:0\r\n", parsed.trailers);
}

// Connect's GET for a method without side effects (Echo2: idempotency_level NO_SIDE_EFFECTS),
// over HTTP/1.1 and HTTP/2 with curl: JSON in the query (percent-encoded), protobuf in base64url;
// a method with side effects is refused (405), a query that is not base64 is invalid (400).
TEST_P(WebRpcTest, ConnectGetOverHttp1AndHttp2) {
  StartServer();
  ASSERT_EQ(0, access("/usr/bin/curl", X_OK)) << "curl is a test dependency";
  const std::string base = "http://127.0.0.1:" + std::to_string(port_) + "/arenarpc.e2e.TestService/";
  std::string proto = util::EncodeBase64(EchoRequestBytes("base64 get"), /*pad=*/false);
  for (char& c : proto) c = c == '+' ? '-' : c == '/' ? '_' : c;  // base64url
  for (const char* version : {"--http1.1 ", "--http2-prior-knowledge "}) {
    const std::string curl = std::string("/usr/bin/curl -sS -g --max-time 10 ") + version +
                             "-w ' %{http_code} %{http_version}' '" + base;
    const std::string json = RunCommand(
        curl + "Echo2?connect=v1&encoding=json&message=%7B%22message%22%3A%22get%22%7D'");
    EXPECT_EQ(0u, json.find(R"({"message":"get")")) << version << json;
    EXPECT_NE(std::string::npos, json.find(" 200 ")) << version << json;
    const std::string binary =
        RunCommand(curl + "Echo2?connect=v1&encoding=proto&base64=1&message=" + proto + "'");
    const size_t end = binary.rfind(" 200 ");
    ASSERT_NE(std::string::npos, end) << version << binary;
    TestResponse echoed;
    ASSERT_TRUE(echoed.ParseFromString(binary.substr(0, end))) << version << binary;
    EXPECT_EQ("base64 get", echoed.message());
    const std::string side_effects = RunCommand(
        curl + "Echo?connect=v1&encoding=json&message=%7B%7D'");
    EXPECT_NE(std::string::npos, side_effects.find("Connect GET calls methods without side effects"))
        << version << side_effects;
    EXPECT_NE(std::string::npos, side_effects.find(" 405 ")) << version << side_effects;
    const std::string garbage = RunCommand(
        curl + "Echo2?connect=v1&encoding=proto&base64=1&message=%21%21%21'");
    EXPECT_EQ(0u, garbage.find(R"({"code":"invalid_argument","message":"message= is not base64)"))
        << version << garbage;
    EXPECT_NE(std::string::npos, garbage.find(" 400 ")) << version << garbage;
  }
  EXPECT_EQ(4u, server_->GetMethodStats("arenarpc.e2e.TestService.Echo2").calls);
  EXPECT_EQ(0u, server_->GetMethodStats("arenarpc.e2e.TestService.Echo").calls);
  ExpectAllPairsReleased();
}

// Hostile bodies on the new paths, while a good client calls on its own connection: base64
// garbage, envelope lengths that lie (past the body, past max_body_size), a body past
// max_body_size. Each gets a clear error; memory stays within the stated bound (raw body bytes
// <= max_body_size per request held); the good client sees 0 errors.
TEST_P(WebRpcTest, HostileBodiesGetClearErrors) {
  ServerOptions options;
  options.max_body_size = 1u << 20;
  StartServer(options);
  StartMeasuredGoodClient();
  for (int round = 0; round < 50; ++round) {
    // Garbage that is not base64 (a '!' and a '=' in the middle of a quantum).
    const HttpResponse garbage = GrpcWeb(std::string(4000, 'A') + "!@#$" + "AA=A",
                                         "application/grpc-web-text");
    std::string decoded = garbage.body;
    size_t bad_at = 0;
    ASSERT_TRUE(util::DecodeBase64InPlace(&decoded, &bad_at));
    ASSERT_EQ(0u, ParseGrpcWeb(decoded).trailers.find(
                      "grpc-status:3\r\ngrpc-message:grpc-web-text body is not base64 (at byte 4000)"))
        << decoded;
    // An envelope that claims 4 GiB - 1.
    std::string lie = Frame(0, "abc");
    lie[1] = lie[2] = lie[3] = lie[4] = '\xff';
    const HttpResponse lying = GrpcWeb(lie);
    ASSERT_EQ(0u, ParseGrpcWeb(lying.body).trailers.find(
                      "grpc-status:3\r\ngrpc-message:request envelope says 4294967295 "
                      "bytes, the body has 3"))
        << lying.body;
  }
  // A body past max_body_size: 413 and the connection closes; the server never holds it.
  HttpClient big(port_);
  ASSERT_TRUE(big.Send("POST /arenarpc.e2e.TestService/Echo HTTP/1.1\r\nHost: x\r\n"
                       "Content-Type: application/grpc-web\r\nContent-Length: 2000000\r\n\r\n"));
  std::optional<HttpResponse> too_big = big.Read();
  ASSERT_TRUE(too_big);
  EXPECT_EQ(413, too_big->status);
  EXPECT_TRUE(big.WaitClosed());
  StopMeasuredGoodClient(64u << 20);
  ExpectAllPairsReleased();
}


// Server streaming: StreamService.ServerStream (CountingServerStream) next to TestService.
class WebStreamTest : public ServerTest {
 protected:
  void StartStreamServer(ServerOptions options = {}) {
    options.memory_mode = GetParam();
    if (options.num_threads == 0) options.num_threads = 2;
    service_ = std::make_unique<TestServiceImpl>();
    streams_ = std::make_unique<GrpcStreamService>(StreamService::descriptor(), &unary_);
    std::string error;
    ASSERT_EQ(0, streams_->AddMethod("ServerStream", CountingServerStream, {}, &error)) << error;
    server_ = std::make_unique<Server>();
    ASSERT_EQ(0, server_->AddService(service_.get(), SERVER_DOESNT_OWN_SERVICE));
    ASSERT_EQ(0, server_->AddService(streams_.get(), SERVER_DOESNT_OWN_SERVICE));
    ASSERT_EQ(0, server_->Start("127.0.0.1:0", options)) << server_->last_error();
    port_ = server_->listen_port();
  }
  void TearDown() override {
    ServerTest::TearDown();
    streams_.reset();
  }
  // curl POSTs `body` (from a file: it may hold any byte) and returns the de-chunked reply body,
  // or with `-i` in `flags` the head too.
  std::string Curl(std::string_view path, std::string_view type, const std::string& body,
                   const std::string& flags = {}) {
    const auto file = std::filesystem::temp_directory_path() /
                      ("arenarpc_web_stream_" + std::to_string(::getpid()) + ".body");
    std::ofstream(file, std::ios::binary) << body;
    const std::string out = RunCommand(
        "/usr/bin/curl -sS --max-time 20 " + flags + " -H 'Content-Type: " + std::string(type) +
        "' --data-binary @" + file.string() + " http://127.0.0.1:" + std::to_string(port_) +
        std::string(path));
    std::filesystem::remove(file);
    return out;
  }
  static std::string StreamRequestBytes(const std::string& text, int count, int fail_code = 0,
                                        int bytes = 0) {
    StreamRequest request;
    request.set_text(text);
    request.set_count(count);
    request.set_fail_code(fail_code);
    request.set_bytes(bytes);
    return request.SerializeAsString();
  }
  static constexpr std::string_view kStreamPath = "/arenarpc.e2e.StreamService/ServerStream";
  StreamUnary unary_;
  std::unique_ptr<GrpcStreamService> streams_;
};
ARENARPC_ALL_MODES(WebStreamTest);

// Connect's streaming body: the last envelope (flag 2) is the end of stream.
StreamBody ParseConnectStream(std::string_view body) { return ParseEnvelopes(body, 2); }

TEST_P(WebStreamTest, GrpcWebServerStreamWithCurl) {
  StartStreamServer();
  const std::string head_and_body = Curl(kStreamPath, "application/grpc-web+proto",
                                         Frame(0, StreamRequestBytes("s", 300)), "-i");
  const size_t blank = head_and_body.find("\r\n\r\n");
  ASSERT_NE(std::string::npos, blank) << head_and_body;
  const std::string head = head_and_body.substr(0, blank);
  EXPECT_NE(std::string::npos, head.find("Transfer-Encoding: chunked")) << head;
  EXPECT_NE(std::string::npos, head.find("Content-Type: application/grpc-web+proto")) << head;
  const GrpcWebReply reply = ParseGrpcWeb(std::string_view(head_and_body).substr(blank + 4));
  ASSERT_TRUE(reply.well_formed) << head;
  ASSERT_EQ(300u, reply.messages.size());
  for (int i = 0; i < 300; ++i) {
    StreamReply message;
    ASSERT_TRUE(message.ParseFromString(reply.messages[i]));
    EXPECT_EQ(i, message.index());
    EXPECT_EQ("s", message.text());
  }
  EXPECT_EQ("grpc-status:0\r\n", reply.trailers);
  // A failure after the messages: its status, text and trailer in the trailers frame.
  const GrpcWebReply failed = ParseGrpcWeb(
      Curl(kStreamPath, "application/grpc-web", Frame(0, StreamRequestBytes("failing", 3, 1))));
  EXPECT_EQ(3u, failed.messages.size());
  EXPECT_EQ("grpc-status:7\r\ngrpc-message:failing\r\nx-trailer:t\r\n", failed.trailers);
  ExpectAllPairsReleased("arenarpc.e2e.StreamService.ServerStream");
}

TEST_P(WebStreamTest, GrpcWebTextServerStream) {
  StartStreamServer();
  std::string body = Curl(kStreamPath, "application/grpc-web-text",
                          util::EncodeBase64(Frame(0, StreamRequestBytes("t", 20)), true));
  size_t bad_at = 0;
  ASSERT_TRUE(util::DecodeBase64InPlace(&body, &bad_at)) << "each chunk is base64 on its own";
  const GrpcWebReply reply = ParseGrpcWeb(body);
  ASSERT_TRUE(reply.well_formed);
  EXPECT_EQ(20u, reply.messages.size());
  EXPECT_EQ("grpc-status:0\r\n", reply.trailers);
}

TEST_P(WebStreamTest, ConnectServerStreamJsonAndProto) {
  StartStreamServer();
  const std::string json_request = Frame(0, R"({"text":"j","count":3})");
  const StreamBody json = ParseConnectStream(
      Curl(kStreamPath, "application/connect+json", json_request));
  ASSERT_TRUE(json.well_formed);
  ASSERT_EQ(3u, json.messages.size());
  EXPECT_EQ(R"({"text":"j","index":2})", json.messages[2]);
  EXPECT_EQ("{}", json.last);
  const StreamBody proto = ParseConnectStream(Curl(
      kStreamPath, "application/connect+proto", Frame(0, StreamRequestBytes("failing", 2, 1))));
  ASSERT_TRUE(proto.well_formed);
  ASSERT_EQ(2u, proto.messages.size());
  StreamReply second;
  ASSERT_TRUE(second.ParseFromString(proto.messages[1]));
  EXPECT_EQ(1, second.index());
  EXPECT_EQ(R"({"error":{"code":"permission_denied","message":"failing"},"metadata":{"x-trailer":["t"]}})",
            proto.last);
  // An envelope that claims 4 GiB - 1 (more than the body and than max_body_size).
  std::string lie = Frame(0, StreamRequestBytes("lie", 1));
  lie[1] = lie[2] = lie[3] = lie[4] = '\xff';
  const StreamBody lying = ParseConnectStream(Curl(kStreamPath, "application/connect+proto", lie));
  ASSERT_TRUE(lying.well_formed);
  EXPECT_TRUE(lying.messages.empty());
  EXPECT_EQ(0u, lying.last.find(R"({"error":{"code":"invalid_argument","message":"request envelope says 4294967295 bytes)"))
      << lying.last;
  // A Connect streaming Content-Type on a unary method, a unary one on a streaming method.
  const StreamBody on_unary = ParseConnectStream(
      Curl("/arenarpc.e2e.StreamService/Unary", "application/connect+proto",
           Frame(0, StreamRequestBytes("u", 1))));
  EXPECT_EQ(0u, on_unary.last.find(R"({"error":{"code":"invalid_argument","message":"application/connect+proto|json calls streaming rpcs)"))
      << on_unary.last;
  const std::string unary_type =
      Curl(kStreamPath, "application/json", R"({"text":"x"})",
           "-H 'Connect-Protocol-Version: 1' -w ' %{http_code}'");
  EXPECT_EQ(0u, unary_type.find(R"({"code":"invalid_argument","message":"arenarpc.e2e.StreamService.ServerStream is a streaming rpc)"))
      << unary_type;
  EXPECT_EQ(" 400", unary_type.substr(unary_type.size() - 4));
  ExpectAllPairsReleased("arenarpc.e2e.StreamService.ServerStream");
}

// The same protocols over HTTP/2 on the same port (curl --http2-prior-knowledge): Connect unary
// (JSON, its error JSON), grpc-web-text unary and server streaming, Connect server streaming
// (JSON, binary with a failure and its trailer), the wrong Connect flavour for a method, and
// CORS (a preflight, an allowed and a refused origin, an error reply that names the origin).
TEST_P(WebStreamTest, Http2ConnectGrpcWebTextAndCors) {
  ServerOptions options;
  options.cors_allowed_origins = {"http://app.test:8080"};
  StartStreamServer(options);
  ASSERT_EQ(0, access("/usr/bin/curl", X_OK)) << "curl is a test dependency";
  const std::string h2 = "--http2-prior-knowledge ";
  const std::string json_reply = Curl(kEchoPath, "application/json", R"({"message":"over h2"})",
                                      h2 + "-w ' %{http_version}'");
  EXPECT_EQ(0u, json_reply.find(R"({"message":"over h2")")) << json_reply;
  EXPECT_EQ(" 2", json_reply.substr(json_reply.size() - 2)) << "HTTP/2: " << json_reply;
  const std::string not_found = Curl("/arenarpc.e2e.TestService/Nope", "application/json", "{}",
                                     h2 + "-w ' %{http_code}'");
  EXPECT_EQ(0u, not_found.find(R"({"code":"unimplemented","message":"Method not found: )"))
      << not_found;
  EXPECT_EQ(" 501", not_found.substr(not_found.size() - 4)) << not_found;
  std::string text = Curl(kEchoPath, "application/grpc-web-text",
                          util::EncodeBase64(Frame(0, EchoRequestBytes("h2 text")), true), h2);
  size_t bad_at = 0;
  ASSERT_TRUE(util::DecodeBase64InPlace(&text, &bad_at)) << text;
  const GrpcWebReply text_reply = ParseGrpcWeb(text);
  ASSERT_TRUE(text_reply.well_formed) << text;
  ASSERT_EQ(1u, text_reply.messages.size());
  TestResponse echoed;
  ASSERT_TRUE(echoed.ParseFromString(text_reply.messages[0]));
  EXPECT_EQ("h2 text", echoed.message());
  EXPECT_EQ("grpc-status:0\r\n", text_reply.trailers);
  std::string text_stream = Curl(kStreamPath, "application/grpc-web-text",
                                 util::EncodeBase64(Frame(0, StreamRequestBytes("t", 20)), true), h2);
  ASSERT_TRUE(util::DecodeBase64InPlace(&text_stream, &bad_at)) << "each frame is base64 on its own";
  const GrpcWebReply text_streamed = ParseGrpcWeb(text_stream);
  ASSERT_TRUE(text_streamed.well_formed);
  EXPECT_EQ(20u, text_streamed.messages.size());
  EXPECT_EQ("grpc-status:0\r\n", text_streamed.trailers);
  const StreamBody json = ParseConnectStream(
      Curl(kStreamPath, "application/connect+json", Frame(0, R"({"text":"j","count":3})"), h2));
  ASSERT_TRUE(json.well_formed);
  ASSERT_EQ(3u, json.messages.size());
  EXPECT_EQ(R"({"text":"j","index":2})", json.messages[2]);
  EXPECT_EQ("{}", json.last);
  const StreamBody failing = ParseConnectStream(Curl(
      kStreamPath, "application/connect+proto", Frame(0, StreamRequestBytes("failing", 2, 1)), h2));
  ASSERT_TRUE(failing.well_formed);
  EXPECT_EQ(2u, failing.messages.size());
  EXPECT_EQ(R"({"error":{"code":"permission_denied","message":"failing"},"metadata":{"x-trailer":["t"]}})",
            failing.last);
  const StreamBody on_unary = ParseConnectStream(Curl(
      "/arenarpc.e2e.StreamService/Unary", "application/connect+proto",
      Frame(0, StreamRequestBytes("u", 1)), h2));
  EXPECT_EQ(0u, on_unary.last.find(R"({"error":{"code":"invalid_argument","message":"application/connect+proto|json calls streaming rpcs)"))
      << on_unary.last;
  const std::string unary_type =
      Curl(kStreamPath, "application/json", R"({"text":"x"})", h2 + "-w ' %{http_code}'");
  EXPECT_NE(std::string::npos, unary_type.find(R"("message":"/arenarpc.e2e.StreamService/ServerStream is a streaming rpc)"))
      << unary_type;
  EXPECT_EQ(" 400", unary_type.substr(unary_type.size() - 4));
  // CORS: the preflight (curl -X OPTIONS), then calls from the allowed origin and another.
  const std::string preflight =
      "/usr/bin/curl -sS --max-time 10 --http2-prior-knowledge -i -X OPTIONS "
      "-H 'Access-Control-Request-Method: POST' -H 'Access-Control-Request-Headers: content-type' ";
  const std::string url = " http://127.0.0.1:" + std::to_string(port_) + std::string(kEchoPath);
  const std::string allowed = RunCommand(preflight + "-H 'Origin: http://app.test:8080'" + url);
  EXPECT_EQ(0u, allowed.find("HTTP/2 204")) << allowed;
  EXPECT_NE(std::string::npos, allowed.find("access-control-allow-origin: http://app.test:8080"))
      << allowed;
  EXPECT_NE(std::string::npos, allowed.find("access-control-allow-headers: Content-Type,"))
      << allowed;
  const std::string refused = RunCommand(preflight + "-H 'Origin: http://evil.test'" + url);
  EXPECT_EQ(0u, refused.find("HTTP/2 403")) << refused;
  EXPECT_EQ(std::string::npos, refused.find("access-control-allow-origin")) << refused;
  const std::string call = Curl(kEchoPath, "application/json", R"({"message":"c"})",
                                h2 + "-i -H 'Origin: http://app.test:8080'");
  EXPECT_NE(std::string::npos, call.find("access-control-allow-origin: http://app.test:8080"))
      << call;
  EXPECT_NE(std::string::npos, call.find("access-control-expose-headers: Grpc-Status")) << call;
  const std::string error = Curl("/arenarpc.e2e.TestService/Nope", "application/json", "{}",
                                 h2 + "-i -H 'Origin: http://app.test:8080'");
  EXPECT_EQ(0u, error.find("HTTP/2 501")) << error;
  EXPECT_NE(std::string::npos, error.find("access-control-allow-origin: http://app.test:8080"))
      << error;
  const std::string other = Curl(kEchoPath, "application/json", R"({"message":"c"})",
                                 h2 + "-i -H 'Origin: http://evil.test'");
  EXPECT_EQ(0u, other.find("HTTP/2 200")) << other;
  EXPECT_EQ(std::string::npos, other.find("access-control-allow-origin")) << other;
  EXPECT_EQ(0u, server_->GetServerStats().malformed_frames);
  ExpectAllPairsReleased("arenarpc.e2e.StreamService.ServerStream");
}

// A client that asks for a long stream of 64 KiB messages and never reads: the handler's writes
// wait once the connection holds max_unwritten_bytes (the bound: that, plus one message, plus the
// kernel's socket buffers), write_timeout closes the connection, the handler ends; a good client
// on another connection keeps 0 errors.
TEST_P(WebStreamTest, StreamingClientThatNeverReadsIsBounded) {
  ServerOptions options;
  options.max_unwritten_bytes = 8u << 20;
  options.write_timeout = std::chrono::milliseconds(1000);
  StartStreamServer(options);
  StartMeasuredGoodClient();
  std::vector<std::unique_ptr<HttpClient>> readers;
  for (int i = 0; i < 4; ++i) {
    readers.push_back(std::make_unique<HttpClient>(port_));
    ASSERT_TRUE(readers.back()->Send(HttpClient::Request(
        "POST", kStreamPath, Frame(0, StreamRequestBytes("never read", 100000, 0, 64 << 10)),
        "application/grpc-web")));
  }
  // Each connection first takes 8 MiB and the socket buffers of 64 KiB messages: under
  // ThreadSanitizer, beside other tests on the same cores, that alone can take more than 5 s.
  EXPECT_EQ(4u, StatSoon(&ServerStats::connections_closed_write_timeout, 4,
                         std::chrono::seconds(30)));
  // 4 connections x (8 MiB held + one message + socket buffers) and the handlers' messages.
  StopMeasuredGoodClient(4 * (8u << 20) + (32u << 20));
  for (int i = 0; i < 500 && server_->GetMethodStats(
                                 "arenarpc.e2e.StreamService.ServerStream").in_flight > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const MethodStats stats = server_->GetMethodStats("arenarpc.e2e.StreamService.ServerStream");
  EXPECT_EQ(0, stats.in_flight) << "the handlers ended once their connections closed";
  EXPECT_EQ(4u, stats.calls);
  ExpectAllPairsReleased("arenarpc.e2e.StreamService.ServerStream");
}

// An open grpc-web server stream is on /connections (kind "web") until its client goes.
TEST_P(WebStreamTest, OpenStreamsAreOnThePages) {
  ServerOptions options;
  options.write_timeout = std::chrono::milliseconds(30000);
  StartStreamServer(options);
  auto reader = std::make_unique<HttpClient>(port_);
  ASSERT_TRUE(reader->Send(HttpClient::Request(
      "POST", kStreamPath, Frame(0, StreamRequestBytes("never read", 100000, 0, 64 << 10)),
      "application/grpc-web")));
  const auto connections = [&] {
    HttpClient page(port_);
    EXPECT_TRUE(page.Send(HttpClient::Request("GET", "/connections?format=json")));
    std::optional<HttpResponse> reply = page.Read();
    return reply ? reply->body : std::string();
  };
  bool listed = false;
  for (int i = 0; i < 300 && !listed; ++i) {
    listed = connections().find(R"("kind":"web","method":"arenarpc.e2e.StreamService.ServerStream")") !=
             std::string::npos;
    if (!listed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(listed) << connections();
  reader->Reset();
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = connections().find(R"("kind":"web")") == std::string::npos;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << connections();
}

}  // namespace
}  // namespace arenarpc::e2e
