#include "dra/pod_ports.h"

#include <gtest/gtest.h>

#include <optional>

#include "dra/resource_slice.h"
#include "usage/port_counters.h"
#include "test/dra/dra_test_support.h"

namespace kube_rdma {
namespace {

DraPortNames a100Ports() {
  const NodeTopology topology = discoverFixture("a100-roce");
  return draPortNames(topology, buildPools(topology, defaultPluginConfig()));
}

std::string nameOf(const std::string& device) {
  const NodeTopology topology = discoverFixture("a100-roce");
  return draDeviceName(*topology.findDevice(device), 1);
}

TEST(ClaimPortFamily, TheDevicesOfOurClaimsOnThisNodeAreTheirPorts) {
  const DraPortNames ports = a100Ports();
  ASSERT_EQ(ports.size(), 8u); // the data ports; mlx5_0 carries the default route
  ASSERT_EQ(ports.at(nameOf("mlx5_3")), (HcaPort{"mlx5_3", 1}));
  const std::vector<ContainerHoldings> held{
      {"training",
       "worker-0",
       "pytorch",
       {},
       {{"training", "nic", kDraDriverName, kTestNode, nameOf("mlx5_3")},
        {"training", "nic", kDraDriverName, kTestNode, nameOf("mlx5_4")},
        // another node's pool, another driver, a device this node does not publish
        {"training", "nic", kDraDriverName, "other-node", nameOf("mlx5_5")},
        {"training", "gpu", "gpu.nvidia.com", kTestNode, nameOf("mlx5_6")},
        {"training", "nic", kDraDriverName, kTestNode, "pci-0000-ff-00-0-p1"}}}};
  const ScrapedFamily family = claimPortFamily(held, ports, kTestNode);
  EXPECT_EQ(family.name, "kube_rdma_pod_port_info");
  ASSERT_EQ(family.samples.size(), 2u);
  EXPECT_EQ(family.samples[0].first, (Labels{{"namespace", "training"},
                                             {"pod", "worker-0"},
                                             {"container", "pytorch"},
                                             {"claim", "nic"},
                                             {"device", "mlx5_3"},
                                             {"port", "1"}}));
  EXPECT_EQ(family.samples[0].second, 1);
  EXPECT_EQ(family.samples[1].first.at("device"), "mlx5_4");
}

TEST(ClaimPortFamily, DevicePluginIdsAreNotClaims) {
  const ScrapedFamily family = claimPortFamily(
      {{"training", "worker-0", "pytorch", {{"rdma/shared", {"3"}}}, {}}}, a100Ports(), kTestNode);
  EXPECT_TRUE(family.samples.empty());
}

TEST(ClaimPortsHeld, AreThePortsTheFamilyNames) {
  const DraPortNames ports = a100Ports();
  const ContainerHoldings container{
      "training",
      "worker-0",
      "pytorch",
      {{"rdma/shared", {"3"}}},
      {{"training", "nic", kDraDriverName, kTestNode, nameOf("mlx5_4")},
       {"training", "nic", kDraDriverName, "other-node", nameOf("mlx5_5")}}};
  EXPECT_EQ(claimPortsHeld(container, ports, kTestNode), (std::vector<HcaPort>{{"mlx5_4", 1}}));
}

std::optional<double> sampleOf(const std::vector<ScrapedFamily>& families, const std::string& name,
                               const std::string& device) {
  for (const auto& family : families) {
    for (const auto& [labels, value] : family.samples) {
      if (family.name == name && labels.at("device") == device) {
        return value;
      }
    }
  }
  return std::nullopt;
}

TEST(PublishedPortUsage, ScrapesTheNodesPortCountersAndWhoHoldsWhichPort) {
  const std::string sysfs = std::string(KUBE_RDMA_FIXTURES) + "/a100-roce/sys";
  const NodeTopology topology = discoverFixture("a100-roce");
  PublishedPortUsage usage(sysfs, kTestNode);
  // Before the first set(): no topology, no counters, nobody's ports.
  EXPECT_TRUE(usage.scrape(std::nullopt).empty());
  usage.set(topology, buildPools(topology, defaultPluginConfig()));

  const std::vector<ContainerHoldings> held{
      {"training",
       "worker-0",
       "pytorch",
       {},
       {{"training", "nic", kDraDriverName, kTestNode, nameOf("mlx5_4")}}}};
  const auto families = usage.scrape(held);
  // Every port's counters, mlx5_0 (not published) included: the node's, as the device plugin's.
  const auto words = readPortDataWords(sysfs, {"mlx5_4", 1});
  ASSERT_TRUE(words.has_value());
  EXPECT_TRUE(sampleOf(families, "kube_rdma_port_xmit_data_bytes_total", "mlx5_0").has_value());
  EXPECT_EQ(sampleOf(families, "kube_rdma_pod_port_info", "mlx5_4"), 1);
  EXPECT_FALSE(sampleOf(families, "kube_rdma_pod_port_info", "mlx5_5").has_value());
  // Without the kubelet's answer: the counters alone.
  EXPECT_FALSE(
      sampleOf(usage.scrape(std::nullopt), "kube_rdma_pod_port_info", "mlx5_4").has_value());

  EXPECT_EQ(usage.traffic(held),
            (std::vector<PodPortTraffic>{{"training", "worker-0", {"mlx5_4:1"}, *words}}));
}

} // namespace
} // namespace kube_rdma
