#include "http/metrics_server.h"

#include <httplib.h>

#include <gtest/gtest.h>

#include <atomic>
#include <string>

namespace kube_rdma {
namespace {

TEST(MetricsEndpoint, ServesMetricsAndHealthzAndSaysWhatIsWrong) {
  std::atomic<int> renders = 0;
  std::atomic<bool> healthy = true;
  auto server = MetricsServer::start(
      "127.0.0.1:0",
      [&renders] {
        ++renders;
        return std::string("kube_rdma_up 1\n");
      },
      [&healthy]() -> Result<std::string> {
        if (healthy) {
          return std::string("ok\n");
        }
        return makeError("pool rdma/hca is not serving");
      });
  ASSERT_TRUE(server.ok()) << server.error().message;
  ASSERT_GT((*server)->port(), 0);
  httplib::Client client("127.0.0.1", (*server)->port());

  auto metrics = client.Get("/metrics?name[]=x");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->body, "kube_rdma_up 1\n");
  EXPECT_NE(metrics->get_header_value("Content-Type").find("version=0.0.4"), std::string::npos);

  auto ok = client.Get("/healthz");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "ok\n");
  healthy = false;
  auto sick = client.Get("/healthz");
  ASSERT_TRUE(sick);
  EXPECT_EQ(sick->status, 503);
  EXPECT_EQ(sick->body, "pool rdma/hca is not serving\n");

  auto other = client.Get("/");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  EXPECT_EQ(renders, 1);
}

TEST(MetricsEndpoint, AnAddressInUseOrMalformedIsAnError) {
  auto first = MetricsServer::start(
      "127.0.0.1:0", [] { return std::string(); },
      [] { return Result<std::string>(std::string("ok\n")); });
  ASSERT_TRUE(first.ok());
  const std::string taken = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = MetricsServer::start(
      taken, [] { return std::string(); }, [] { return Result<std::string>(std::string("ok\n")); });
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find(taken), std::string::npos);
  EXPECT_FALSE(MetricsServer::start(
                   "no-port", [] { return std::string(); },
                   [] { return Result<std::string>(std::string("ok\n")); })
                   .ok());
}

} // namespace
} // namespace kube_rdma
