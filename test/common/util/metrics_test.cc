#include "common/util/metrics.h"

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

TEST(MetricsRegistry, RendersCountersGaugesAndHistogramsInExpositionFormat) {
  MetricsRegistry registry;
  registry.counter({"kube_rdma_requests_total", "Requests."}, {{"outcome", "ok"}}).inc(3);
  registry.gauge({"kube_rdma_devices", "Devices."}, {{"pool", "rdma/hca"}, {"health", "Healthy"}})
      .set(8);
  auto& h = registry.histogram({"kube_rdma_latency_seconds", "Latency."}, {0.001, 0.01});
  h.observe(0.0005);
  h.observe(0.005);
  h.observe(1);
  const std::string text = registry.render();
  EXPECT_NE(text.find("# TYPE kube_rdma_requests_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("kube_rdma_requests_total{outcome=\"ok\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("kube_rdma_devices{health=\"Healthy\",pool=\"rdma/hca\"} 8\n"),
            std::string::npos);
  EXPECT_NE(text.find("kube_rdma_latency_seconds_bucket{le=\"0.001\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("kube_rdma_latency_seconds_bucket{le=\"0.01\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("kube_rdma_latency_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("kube_rdma_latency_seconds_count 3\n"), std::string::npos);
}

TEST(MetricsRegistry, WritesBucketBoundsInTheirShortestForm) {
  MetricsRegistry registry;
  registry.histogram({"h_seconds", "H."}, {0.00005, 0.1, 2.5}).observe(1);
  const std::string text = registry.render();
  EXPECT_NE(text.find("h_seconds_bucket{le=\"5e-05\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("h_seconds_bucket{le=\"0.1\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("h_seconds_bucket{le=\"2.5\"} 1\n"), std::string::npos) << text;
}

TEST(MetricsRegistry, WritesWholeNumbersWithoutAnExponent) {
  MetricsRegistry registry;
  registry.counter({"c_total", "C."}, {{"n", "ten"}}).inc(10);
  registry.counter({"c_total", "C."}, {{"n", "million"}}).inc(1000000);
  registry.gauge({"g", "G."}, {}).set(20);
  const std::string text = registry.render();
  EXPECT_NE(text.find("c_total{n=\"ten\"} 10\n"), std::string::npos) << text;
  EXPECT_NE(text.find("c_total{n=\"million\"} 1000000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("g 20\n"), std::string::npos) << text;
}

TEST(ScrapedFamilies, RenderTypedWithTheirSamplesInOrder) {
  const std::vector<ScrapedFamily> families{
      {"x_bytes_total", "X.", MetricType::kCounter, {{{{"device", "mlx5_1"}}, 85902621924.0}}},
      {"temp", "T.", MetricType::kGauge, {{{}, 0.5}, {{{"a", "q\""}}, 2}}}};
  EXPECT_EQ(renderScraped(families), "# HELP x_bytes_total X.\n"
                                     "# TYPE x_bytes_total counter\n"
                                     "x_bytes_total{device=\"mlx5_1\"} 85902621924\n"
                                     "# HELP temp T.\n"
                                     "# TYPE temp gauge\n"
                                     "temp 0.5\n"
                                     "temp{a=\"q\\\"\"} 2\n");
}

TEST(MetricsRegistry, EscapesLabelValues) {
  const std::vector<ScrapedFamily> families = {
      {"x", "X.", MetricType::kGauge, {{{{"a", "a\"b\\c\nd"}}, 1}}}};
  EXPECT_EQ(renderScraped(families), "# HELP x X.\n"
                                     "# TYPE x gauge\n"
                                     "x{a=\"a\\\"b\\\\c\\nd\"} 1\n");
}

} // namespace
} // namespace kube_rdma
