#include "plugin/http_message.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include "plugin/metrics_server.h"

namespace kube_rdma {
namespace {

using namespace std::string_literals;

TEST(RequestHeadLength, EndsAtTheFirstBlankLine) {
  const std::string crlf = "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n";
  EXPECT_EQ(requestHeadLength(crlf), crlf.size());
  EXPECT_EQ(requestHeadLength(crlf + "body"), crlf.size());
  const std::string lf = "GET / HTTP/1.0\n\n";
  EXPECT_EQ(requestHeadLength(lf), lf.size());
  EXPECT_EQ(requestHeadLength("GET / HTTP/1.1\r\nHost: a\r\n"), 0u);
  EXPECT_EQ(requestHeadLength("GET / HTTP/1.1\r\n\r"), 0u);
  EXPECT_EQ(requestHeadLength(""), 0u);
}

TEST(ParseRequestHead, RequestLineAndPath) {
  auto head =
      parseRequestHead("GET /metrics?x=1 HTTP/1.1\r\nHost: node:9400\r\nAccept: */*\r\n\r\n");
  ASSERT_TRUE(head.ok()) << head.error().message;
  EXPECT_EQ(head->method, "GET");
  EXPECT_EQ(head->target, "/metrics?x=1");
  EXPECT_EQ(head->path, "/metrics");
  auto old = parseRequestHead("POST /healthz HTTP/1.0\n\n");
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_EQ(old->method, "POST");
}

struct MalformedCase {
  std::string description;
  std::string head;
  std::string error;
};

class ParseRequestHeadMalformed : public testing::TestWithParam<MalformedCase> {};

TEST_P(ParseRequestHeadMalformed, SaysWhatIsWrong) {
  auto head = parseRequestHead(GetParam().head);
  ASSERT_FALSE(head.ok());
  EXPECT_NE(head.error().message.find(GetParam().error), std::string::npos) << head.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ParseRequestHeadMalformed,
    testing::Values(
        MalformedCase{"empty", "\r\n\r\n", "request line"},
        MalformedCase{"two parts", "GET /\r\n\r\n", "request line"},
        MalformedCase{"four parts", "GET / x HTTP/1.1\r\n\r\n", "request line"},
        MalformedCase{"double space", "GET  / HTTP/1.1\r\n\r\n", "request line"},
        MalformedCase{"method with a slash", "G/T / HTTP/1.1\r\n\r\n", "method"},
        MalformedCase{"absolute form", "GET http://x/ HTTP/1.1\r\n\r\n", "target"},
        MalformedCase{"control in target", "GET /a\x01 HTTP/1.1\r\n\r\n", "target"},
        MalformedCase{"high byte in target", "GET /\xc3\xa9 HTTP/1.1\r\n\r\n", "target"},
        MalformedCase{"HTTP/2", "GET / HTTP/2.0\r\n\r\n", "HTTP version"},
        MalformedCase{"lower-case version", "GET / http/1.1\r\n\r\n", "HTTP version"},
        MalformedCase{"header without colon", "GET / HTTP/1.1\r\nHost\r\n\r\n", "header"},
        MalformedCase{"space before colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", "header"},
        MalformedCase{"folded header", "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", "header"},
        MalformedCase{"NUL in a value", "GET / HTTP/1.1\r\nA: b\0c\r\n\r\n"s, "control character"}),
    [](const testing::TestParamInfo<MalformedCase>& info) {
      std::string name;
      for (const char c : info.param.description) {
        name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      }
      return name;
    });

TEST(RespondToHead, MalformedIs400AndOnlyGetReachesTheHandler) {
  int calls = 0;
  const HttpHandler handler = [&calls](const HttpRequestHead& request) {
    ++calls;
    return plainResponse(200, "saw " + request.path);
  };
  EXPECT_EQ(respondToHead("nonsense\r\n\r\n", handler).status, 400);
  const auto post = respondToHead("POST /metrics HTTP/1.1\r\n\r\n", handler);
  EXPECT_EQ(post.status, 405);
  EXPECT_NE(post.body.find("POST"), std::string::npos);
  EXPECT_EQ(calls, 0);
  const auto get = respondToHead("GET /x HTTP/1.1\r\n\r\n", handler);
  EXPECT_EQ(get.status, 200);
  EXPECT_EQ(get.body, "saw /x\n");
  EXPECT_EQ(calls, 1);
}

TEST(SerializeResponse, LengthMatchesTheBodyAndTheConnectionCloses) {
  HttpResponse response = plainResponse(503, "pool example.com/hca: no healthy device");
  const std::string text = serializeResponse(response);
  EXPECT_EQ(text.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << text;
  EXPECT_NE(text.find("\r\nContent-Length: " + std::to_string(response.body.size()) + "\r\n"),
            std::string::npos);
  EXPECT_NE(text.find("\r\nConnection: close\r\n"), std::string::npos);
  EXPECT_EQ(text.find("Allow:"), std::string::npos);
  const auto head_end = requestHeadLength(text);
  ASSERT_NE(head_end, 0u);
  EXPECT_EQ(text.substr(head_end), response.body);
  EXPECT_NE(serializeResponse(plainResponse(405, "no")).find("\r\nAllow: GET\r\n"),
            std::string::npos);
}

TEST(MetricsEndpoint, RoutesMetricsHealthzAndNothingElse) {
  int renders = 0;
  bool healthy = true;
  const MetricsServer::RenderFn render = [&renders] {
    ++renders;
    return std::string("kube_rdma_up 1\n");
  };
  const MetricsServer::HealthFn health = [&healthy]() -> Result<std::string> {
    if (healthy) {
      return std::string("ok");
    }
    return makeError("no pool registered");
  };
  auto request = [](const std::string& target) {
    auto head = parseRequestHead("GET " + target + " HTTP/1.1\r\n\r\n");
    EXPECT_TRUE(head.ok());
    return *head;
  };
  const auto metrics = metricsEndpoint(request("/metrics?name[]=x"), render, health);
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.body, "kube_rdma_up 1\n");
  EXPECT_NE(metrics.content_type.find("version=0.0.4"), std::string::npos);
  EXPECT_EQ(metricsEndpoint(request("/healthz"), render, health).status, 200);
  healthy = false;
  const auto sick = metricsEndpoint(request("/healthz"), render, health);
  EXPECT_EQ(sick.status, 503);
  EXPECT_EQ(sick.body, "no pool registered\n");
  EXPECT_EQ(metricsEndpoint(request("/metrics/"), render, health).status, 404);
  EXPECT_EQ(metricsEndpoint(request("/"), render, health).status, 404);
  EXPECT_EQ(renders, 1);
}

} // namespace
} // namespace kube_rdma
