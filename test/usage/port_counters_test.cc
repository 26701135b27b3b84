#include "usage/port_counters.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/node/sysfs_discovery.h"

namespace kube_rdma {
namespace {

const std::string kA100 = std::string(KUBE_RDMA_FIXTURES) + "/a100-roce";

PortCounter counter(const std::string& source, const std::string& name, uint64_t value) {
  return {"mlx5_1", 1, "eth1", source, name, value};
}

TEST(PortCounterNames, FollowPrometheusConventions) {
  EXPECT_EQ(portCounterMetricName("counters", "port_xmit_data"),
            "kube_rdma_port_xmit_data_bytes_total");
  EXPECT_EQ(portCounterMetricName("counters", "port_rcv_data"),
            "kube_rdma_port_rcv_data_bytes_total");
  EXPECT_EQ(portCounterMetricName("counters", "port_rcv_packets"),
            "kube_rdma_port_rcv_packets_total");
  EXPECT_EQ(portCounterMetricName("counters", "VL15_dropped"), "kube_rdma_port_vl15_dropped_total");
  EXPECT_EQ(portCounterMetricName("counters", "symbol_error"), "kube_rdma_port_symbol_error_total");
  EXPECT_EQ(portCounterMetricName("hw_counters", "out_of_sequence"),
            "kube_rdma_port_hw_out_of_sequence_total");
  EXPECT_EQ(portCounterMetricName("hw_counters", "req-cqe.error"),
            "kube_rdma_port_hw_req_cqe_error_total");
  // A driver's hw counter named like a data counter is not taken for 4-octet words.
  EXPECT_EQ(portCounterMetricName("hw_counters", "port_xmit_data"),
            "kube_rdma_port_hw_port_xmit_data_total");
}

TEST(PortCounterFamilies, AreCountersWithDevicePortAndNetdevAndBytesAreFourTimesTheWords) {
  const auto families = portCounterFamilies({counter("counters", "port_rcv_data", 1000),
                                             counter("counters", "symbol_error", 65535),
                                             counter("hw_counters", "np_cnp_sent", 7)});
  ASSERT_EQ(families.size(), 3u);
  const Labels labels{{"device", "mlx5_1"}, {"port", "1"}, {"netdev", "eth1"}};
  EXPECT_EQ(families[0].name, "kube_rdma_port_rcv_data_bytes_total");
  EXPECT_EQ(families[0].type, MetricType::kCounter);
  EXPECT_EQ(families[0].samples, (std::vector<std::pair<Labels, double>>{{labels, 4000}}));
  EXPECT_EQ(families[1].samples, (std::vector<std::pair<Labels, double>>{{labels, 65535}}));
  EXPECT_NE(families[1].help.find("16-bit"), std::string::npos) << families[1].help;
  EXPECT_NE(families[1].help.find("stops at 65535 (saturates"), std::string::npos)
      << families[1].help;
  EXPECT_EQ(families[2].samples, (std::vector<std::pair<Labels, double>>{{labels, 7}}));
}

TEST(PortCounterFamilies, GatherEveryPortOfACounterInOneFamily) {
  auto other = counter("counters", "link_downed", 2);
  other.device = "mlx5_2";
  const auto families = portCounterFamilies({counter("counters", "link_downed", 1), other});
  ASSERT_EQ(families.size(), 1u);
  EXPECT_EQ(families[0].samples.size(), 2u);
  EXPECT_NE(families[0].help.find("stops at 255"), std::string::npos) << families[0].help;
}

TEST(PortCounters, ReadsTheFixturesFilesWithNetdevsAndLeavesLifespanOut) {
  const NodeTopology topology = discoverFromSysfs({kA100 + "/sys", kA100 + "/proc"});
  const auto counters = readPortCounters(kA100 + "/sys", topology);
  const auto find = [&](const std::string& device, const std::string& name) {
    return std::find_if(counters.begin(), counters.end(),
                        [&](const PortCounter& c) { return c.device == device && c.name == name; });
  };
  ASSERT_NE(find("mlx5_1", "port_xmit_data"), counters.end());
  EXPECT_EQ(find("mlx5_1", "port_xmit_data")->netdev, "eth1");
  EXPECT_GT(find("mlx5_1", "port_xmit_data")->value, uint64_t{1} << 32); // a 64-bit counter
  EXPECT_EQ(find("mlx5_1", "symbol_error")->value, 65535u);
  EXPECT_NE(find("mlx5_1", "out_of_sequence"), counters.end());
  EXPECT_EQ(find("mlx5_1", "lifespan"), counters.end());
}

TEST(PortCounters, ReadsOnePortsDataWordsAsTheScrapeDoes) {
  const NodeTopology topology = discoverFromSysfs({kA100 + "/sys", kA100 + "/proc"});
  uint64_t scraped = 0;
  for (const auto& counter : readPortCounters(kA100 + "/sys", topology)) {
    if (counter.device == "mlx5_2" && counter.port == 1 && counter.source == "counters" &&
        (counter.name == "port_xmit_data" || counter.name == "port_rcv_data")) {
      scraped += counter.value;
    }
  }
  ASSERT_GT(scraped, 0u);
  EXPECT_EQ(readPortDataWords(kA100 + "/sys", {"mlx5_2", 1}), scraped);
  EXPECT_EQ(readPortDataWords(kA100 + "/sys", {"mlx5_2", 2}), std::nullopt); // no such port
}

} // namespace
} // namespace kube_rdma
