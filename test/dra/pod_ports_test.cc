#include "dra/pod_ports.h"

#include <gtest/gtest.h>

#include "dra/resource_slice.h"
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

} // namespace
} // namespace kube_rdma
