#include "kubeclient/api_paths.h"

#include <gtest/gtest.h>

#include "kubeclient/api_error.h"
#include "kubeclient/backoff.h"
#include "kubeclient/watch_stream.h"

namespace kube_rdma {
namespace {

using namespace std::chrono_literals;

TEST(ApiPathsTest, CoreAndNamedGroupsClusterScopedAndNamespaced) {
  EXPECT_EQ(*collectionPath(kNodes, ""), "/api/v1/nodes");
  EXPECT_EQ(*objectPath(kNodes, "", "node-1"), "/api/v1/nodes/node-1");
  EXPECT_EQ(*collectionPath(kResourceSlices, ""), "/apis/resource.k8s.io/v1/resourceslices");
  EXPECT_EQ(*objectPath(kResourceClaims, "team-a", "claim-1"),
            "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/claim-1");
  EXPECT_EQ(*collectionPath(kResourceClaimTemplates, "ns"),
            "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaimtemplates");
  // Every namespace: only LIST and WATCH take it.
  EXPECT_EQ(*collectionPath(kResourceClaims, ""), "/apis/resource.k8s.io/v1/resourceclaims");
}

TEST(ApiPathsTest, ScopeMistakesAreErrors) {
  EXPECT_EQ(collectionPath(kResourceSlices, "ns").error().message,
            "resourceslices are cluster-scoped: no namespace ('ns' given)");
  EXPECT_EQ(objectPath(kResourceClaims, "", "c").error().message,
            "resourceclaims are namespaced: 'c' needs a namespace");
  EXPECT_EQ(objectPath(kNodes, "", "").error().message, "an object of nodes needs a name");
}

TEST(ApiPathsTest, NamesAndQueryValuesArePercentEncoded) {
  EXPECT_EQ(*objectPath(kNodes, "", "a/b c"), "/api/v1/nodes/a%2Fb%20c");
  EXPECT_EQ(withQuery("/api/v1/nodes", {{"fieldSelector", "spec.nodeName=n-1,spec.driver=x"},
                                        {"labelSelector", ""},
                                        {"watch", "1"}}),
            "/api/v1/nodes?fieldSelector=spec.nodeName%3Dn-1%2Cspec.driver%3Dx&watch=1");
  EXPECT_EQ(percentEncode("a&b=c?d#e%f~_.-"), "a%26b%3Dc%3Fd%23e%25f~_.-");
}

TEST(ApiPathsTest, ServerUrls) {
  const ServerAddress plain = *parseServerUrl("https://10.0.0.1:6443");
  EXPECT_EQ(plain.host, "10.0.0.1");
  EXPECT_EQ(plain.port, 6443);
  EXPECT_EQ(plain.path_prefix, "");
  const ServerAddress v6 = *parseServerUrl("https://[fd00::1]:443/");
  EXPECT_EQ(v6.host, "fd00::1");
  EXPECT_EQ(v6.port, 443);
  const ServerAddress proxied = *parseServerUrl("https://rancher.example/k8s/clusters/c-1");
  EXPECT_EQ(proxied.host, "rancher.example");
  EXPECT_EQ(proxied.port, 443);
  EXPECT_EQ(proxied.path_prefix, "/k8s/clusters/c-1");

  EXPECT_EQ(
      parseServerUrl("http://10.0.0.1:8080").error().message,
      "server 'http://10.0.0.1:8080' is not an https:// URL (the API is only spoken over TLS)");
  EXPECT_EQ(parseServerUrl("https://h:99999").error().message,
            "server 'https://h:99999': port '99999' is not a number from 1 to 65535");
  EXPECT_EQ(parseServerUrl("https://:443").error().message, "server 'https://:443' has no host");
  EXPECT_FALSE(parseServerUrl("https://[fd00::1"));
}

TEST(ApiErrorTest, AStatusBodyGivesReasonAndMessageVerbatim) {
  const std::string body =
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"resourceslices.resource.k8s.io \"x\" is forbidden: User \"u\" cannot delete resource \"resourceslices\" in API group \"resource.k8s.io\" at the cluster scope","reason":"Forbidden","details":{"name":"x","group":"resource.k8s.io","kind":"resourceslices"},"code":403})";
  const ApiError error = errorFromAnswer(403, body);
  EXPECT_EQ(error.code, 403);
  EXPECT_EQ(error.reason, "Forbidden");
  EXPECT_EQ(error.message,
            "resourceslices.resource.k8s.io \"x\" is forbidden: User \"u\" cannot delete resource "
            "\"resourceslices\" in API group \"resource.k8s.io\" at the cluster scope");
  EXPECT_EQ(describe(error), "HTTP 403 Forbidden: " + error.message);
}

TEST(ApiErrorTest, BodiesThatAreNotAStatusAreQuotedNotTrusted) {
  EXPECT_EQ(errorFromAnswer(502, "<html>Bad Gateway</html>").message,
            "answer is not a Status: '<html>Bad Gateway</html>'");
  EXPECT_EQ(errorFromAnswer(500, "").message, "empty answer, not a Status");
  EXPECT_EQ(errorFromAnswer(500, R"({"kind":7})").message,
            R"(answer is not a Status: '{"kind":7}')");
  EXPECT_EQ(errorFromAnswer(404, R"({"kind":"Status","message":3})").message,
            R"(Status without a message: {"kind":"Status","message":3})");
  const ApiError long_body = errorFromAnswer(500, std::string(1000, 'x'));
  EXPECT_EQ(long_body.message.size(), std::string("answer is not a Status: ''...").size() + 200);
  EXPECT_EQ(errorFromAnswer(500, std::string(100000, '[')).message,
            "answer is not a Status: '" + std::string(200, '[') + "...'");
}

TEST(ApiErrorTest, ParseApiJsonRefusesBadAndDeepJson) {
  EXPECT_EQ(parseApiJson("{\"a\":", 200, "GET x answer").error().message,
            "GET x answer is not JSON: '{\"a\":'");
  const ApiResult<nlohmann::json> deep =
      parseApiJson(std::string(1000, '[') + std::string(1000, ']'), 200, "answer");
  ASSERT_FALSE(deep);
  EXPECT_EQ(deep.error().message, "answer nests deeper than 100 levels: not an API object");
  EXPECT_EQ(deep.error().code, 200);
}

TEST(BackoffTest, GrowsByTheFactorUpToTheCap) {
  const BackoffPolicy policy{100ms, 1000ms, 2.0};
  EXPECT_EQ(backoffDelay(policy, 0), 100ms);
  EXPECT_EQ(backoffDelay(policy, 1), 200ms);
  EXPECT_EQ(backoffDelay(policy, 3), 800ms);
  EXPECT_EQ(backoffDelay(policy, 4), 1000ms);
  EXPECT_EQ(backoffDelay(policy, 1000000), 1000ms);
}

TEST(BackoffTest, JitterStretchesTheDelayByUpToItsShare) {
  const BackoffPolicy policy{100ms, 1000ms, 2.0, 1.0};
  EXPECT_EQ(retryDelay(policy, 1, ApiError{}, 0.0), 200ms);
  EXPECT_EQ(retryDelay(policy, 1, ApiError{}, 0.5), 300ms);
  EXPECT_EQ(retryDelay(policy, 9, ApiError{}, 0.99), 1990ms);
  const BackoffPolicy steady{100ms, 1000ms, 2.0, 0.0};
  EXPECT_EQ(retryDelay(steady, 1, ApiError{}, 0.99), 200ms);
}

TEST(BackoffTest, TheServersRetryAfterIsTheShortestWait) {
  const BackoffPolicy policy{100ms, 1000ms, 2.0, 1.0};
  ApiError throttled{429, "TooManyRequests", ""};
  throttled.retry_after = std::chrono::seconds(3);
  EXPECT_EQ(retryDelay(policy, 0, throttled, 0.5), 3000ms);
  throttled.retry_after = std::chrono::seconds(0);
  EXPECT_EQ(retryDelay(policy, 0, throttled, 0.5), 150ms);
}

TEST(ApiErrorTest, RetryAfterIsDelaySecondsCappedAtTenMinutes) {
  EXPECT_EQ(parseRetryAfter("1"), std::chrono::seconds(1));
  EXPECT_EQ(parseRetryAfter("120"), std::chrono::seconds(120));
  EXPECT_EQ(parseRetryAfter("86400"), std::chrono::seconds(600));
  EXPECT_EQ(parseRetryAfter(""), std::chrono::seconds(0));
  EXPECT_EQ(parseRetryAfter("-1"), std::chrono::seconds(0));
  EXPECT_EQ(parseRetryAfter("Wed, 21 Oct 2026 07:28:00 GMT"), std::chrono::seconds(0));
  EXPECT_EQ(parseRetryAfter("99999999999999999999"), std::chrono::seconds(0));
}

TEST(WatchStreamTest, LinesAreCutAtNewlinesWhereverChunksEnd) {
  WatchLineBuffer buffer;
  std::string line;
  buffer.append(R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"7"}}})"
                "\n{\"type\":\"DEL");
  ASSERT_TRUE(buffer.nextLine(line));
  const WatchEvent added = *parseWatchEvent(line);
  EXPECT_EQ(added.type, "ADDED");
  EXPECT_EQ(resourceVersionOf(added.object), "7");
  EXPECT_FALSE(buffer.nextLine(line));
  buffer.append("ETED\",\"object\":{}}\n");
  ASSERT_TRUE(buffer.nextLine(line));
  EXPECT_EQ(parseWatchEvent(line)->type, "DELETED");
}

TEST(WatchStreamTest, ALineThatIsNotAnEventIsAnError) {
  EXPECT_EQ(parseWatchEvent("[1,2]").error().message,
            "watch: not an event {type, object}: '[1,2]'");
  EXPECT_EQ(parseWatchEvent(R"({"type":"ADDED"})").error().message,
            R"(watch: not an event {type, object}: '{"type":"ADDED"}')");
  EXPECT_EQ(parseWatchEvent("{nope").error().message, "watch event is not JSON: '{nope'");
  EXPECT_EQ(resourceVersionOf(nlohmann::json{{"metadata", {{"resourceVersion", 5}}}}), "");
}

} // namespace
} // namespace kube_rdma
