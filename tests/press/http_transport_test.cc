// arenarpc_press's HTTP+JSON transport against a loopback fake server: the request it writes,
// pipelined calls matched in order, non-2xx replies as failed calls with x-bd-error-code,
// timeouts, refused connections, malformed replies, reconnecting after Connection: close; and the
// /vars reader.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "arenarpc/error_codes.h"
#include "echo/payload_generator.h"
#include "fake_http_server.h"
#include "press/press_result.h"
#include "press/request_source.h"
#include "press/server_vars_fetch.h"
#include "press/transport.h"

namespace arenarpc::press {
namespace {

struct Outcome {
  int code = -1;
  std::string text, body;
  bool json = false;
};

// Sends requests and waits for every outcome.
std::vector<Outcome> SendAll(Transport& transport, const std::vector<PressRequest>& requests) {
  std::vector<Outcome> outcomes(requests.size());
  std::mutex mu;
  for (size_t i = 0; i < requests.size(); ++i) {
    transport.Send(requests[i], [&, i](const CallResult& r) {
      std::lock_guard lock(mu);
      outcomes[i] = {r.error_code, std::string(r.error_text), std::string(r.response_json),
                     r.json_body};
    });
  }
  transport.Drain();
  return outcomes;
}

std::vector<PressRequest> JsonRequests(int n) {
  std::vector<PressRequest> requests(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    requests[static_cast<size_t>(i)].json = "{\"message\":\"m" + std::to_string(i) + "\"}";
  }
  return requests;
}

std::unique_ptr<Transport> Connect(const std::string& address, int64_t timeout_ms = 5000,
                                   int connections = 1) {
  auto transport = MakeTransport("http");
  EXPECT_NE(transport, nullptr) << "http transport not registered";
  TransportOptions options;
  options.server = address;
  options.timeout_ms = timeout_ms;
  options.connections = connections;
  std::string error;
  EXPECT_TRUE(transport->Init(options, &error)) << error;
  return transport;
}

TEST(HttpTransport, PostsJsonAndMatchesPipelinedRepliesInOrder) {
  FakeHttpServer server([](const FakeHttpRequest& r) { return HttpReply(200, r.body); });
  ASSERT_GT(server.port(), 0);
  auto transport = Connect(server.address());
  const auto requests = JsonRequests(50);
  const auto outcomes = SendAll(*transport, requests);
  for (size_t i = 0; i < outcomes.size(); ++i) {
    EXPECT_EQ(outcomes[i].code, 0) << i << " " << outcomes[i].text;
    EXPECT_TRUE(outcomes[i].json);
    EXPECT_EQ(outcomes[i].body, requests[i].json) << i;  // the right reply for each call
  }
  EXPECT_EQ(server.connections(), 1);  // keep-alive: one connection for every call
  const auto seen = server.seen();
  ASSERT_EQ(seen.size(), 50u);
  // The echo workload's method when no --method is given.
  EXPECT_EQ(seen[0].request_line, "POST /arenarpc.example.EchoService/Echo HTTP/1.1");
  EXPECT_NE(seen[0].headers.find("Content-Type: application/json"), std::string::npos);
  EXPECT_NE(seen[0].headers.find("Host: " + server.address()), std::string::npos);
}

TEST(HttpTransport, NonSuccessRepliesFailWithTheirErrorCode) {
  FakeHttpServer server([](const FakeHttpRequest& r) {
    if (r.body.find("m0") != std::string::npos) {
      return HttpReply(503, "", "x-bd-error-code: 2004\r\nx-bd-error-message: too busy\r\n");
    }
    if (r.body.find("m1") != std::string::npos) return HttpReply(404, "no such method");
    return HttpReply(204, "");
  });
  auto transport = Connect(server.address());
  const auto outcomes = SendAll(*transport, JsonRequests(3));
  EXPECT_EQ(outcomes[0].code, ELIMIT);
  EXPECT_EQ(outcomes[0].text, "too busy");
  EXPECT_EQ(outcomes[1].code, kHttpStatusBase - 404);
  EXPECT_EQ(ErrorCodeLabel(outcomes[1].code), "HTTP 404");
  EXPECT_NE(outcomes[1].text.find("no such method"), std::string::npos) << outcomes[1].text;
  EXPECT_EQ(outcomes[2].code, 0);  // any 2xx succeeds
}

TEST(HttpTransport, TimeoutsRefusalsAndMalformedReplies) {
  {
    FakeHttpServer slow([](const FakeHttpRequest&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      return HttpReply(200, "{}");
    });
    auto transport = Connect(slow.address(), /*timeout_ms=*/50);
    const auto outcomes = SendAll(*transport, JsonRequests(2));
    EXPECT_EQ(outcomes[0].code, ERPCTIMEDOUT);
    EXPECT_EQ(outcomes[1].code, ERPCTIMEDOUT);
  }
  {
    int port = 0;
    {
      FakeHttpServer gone([](const FakeHttpRequest&) { return std::string(); });
      port = gone.port();
    }  // closed: nothing listens there now
    auto transport = Connect("127.0.0.1:" + std::to_string(port));
    const auto outcomes = SendAll(*transport, JsonRequests(1));
    EXPECT_EQ(outcomes[0].code, EFAILEDSOCKET);
    EXPECT_NE(outcomes[0].text.find("connect"), std::string::npos) << outcomes[0].text;
  }
  {
    FakeHttpServer garbage([](const FakeHttpRequest&) { return std::string("PRPC garbage\r\n\r\n"); });
    auto transport = Connect(garbage.address());
    const auto outcomes = SendAll(*transport, JsonRequests(1));
    EXPECT_EQ(outcomes[0].code, ERESPONSE);
    EXPECT_NE(outcomes[0].text.find("http: invalid HTTP response"), std::string::npos)
        << outcomes[0].text;
  }
}

TEST(HttpTransport, ReconnectsAfterConnectionClose) {
  FakeHttpServer server([](const FakeHttpRequest& r) {
    return HttpReply(200, r.body, "Connection: close\r\n");
  });
  auto transport = Connect(server.address());
  const auto requests = JsonRequests(3);
  for (const auto& request : requests) {  // one at a time: each reply closes its connection
    const auto outcomes = SendAll(*transport, {request});
    EXPECT_EQ(outcomes[0].code, 0) << outcomes[0].text;
    EXPECT_EQ(outcomes[0].body, request.json);
  }
  EXPECT_EQ(server.connections(), 3);
}

TEST(HttpTransport, RejectsConnectionTypesItDoesNotHave) {
  auto transport = MakeTransport("http");
  TransportOptions options;
  options.server = "127.0.0.1:1";
  options.connection_type = "pooled";
  std::string error;
  EXPECT_FALSE(transport->Init(options, &error));
  EXPECT_NE(error.find("--connection_type must be single"), std::string::npos) << error;
}

TEST(FetchVars, ReadsTheBodyOrSaysWhyNot) {
  FakeHttpServer server([](const FakeHttpRequest& r) {
    if (r.request_line == "GET /vars HTTP/1.1") return HttpReply(200, "process_rss_bytes : 5\n");
    return HttpReply(404, "");
  });
  std::string body, error;
  ASSERT_TRUE(FetchVars(server.address(), std::chrono::milliseconds(2000), &body, &error)) << error;
  EXPECT_EQ(body, "process_rss_bytes : 5\n");

  FakeHttpServer not_http([](const FakeHttpRequest&) { return std::string(); });  // closes
  EXPECT_FALSE(FetchVars(not_http.address(), std::chrono::milliseconds(2000), &body, &error));
  EXPECT_NE(error.find("does not answer HTTP"), std::string::npos) << error;

  FakeHttpServer no_vars([](const FakeHttpRequest&) { return HttpReply(404, ""); });
  error.clear();
  EXPECT_FALSE(FetchVars(no_vars.address(), std::chrono::milliseconds(2000), &body, &error));
  EXPECT_EQ(error, "GET /vars answered HTTP 404");
}

}  // namespace
}  // namespace arenarpc::press
