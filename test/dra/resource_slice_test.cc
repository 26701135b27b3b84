#include "dra/resource_slice.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "test/dra/dra_test_support.h"

namespace kube_rdma {
namespace {

using Json = nlohmann::ordered_json;

const SliceOwner kOwner{kTestNode, "5e0c7a3b-1d2f-4a6b-8c9d-0e1f2a3b4c5d"};
// The API's limits (resource.k8s.io/v1) that the driver stays under without checking.
constexpr size_t kMaxAttributesPerDevice = 32;
constexpr size_t kMaxAttributeIdLength = 32;

TEST(ResourceSlice, A100NodeMatchesTheGoldenSlice) {
  const SliceSet set =
      resourceSlicesFor(discoverFixture("a100-roce"), defaultPluginConfig(), kOwner, 1);
  ASSERT_EQ(set.slices.size(), 1u);
  EXPECT_TRUE(set.warnings.empty());
  const std::string actual = set.slices[0].dump(2) + "\n";
  const std::string path = std::string(KUBE_RDMA_DRA_TESTDATA) + "/a100-roce.slice.json";
  if (std::getenv("UPDATE_GOLDEN") != nullptr) {
    writeTestFile(path, actual);
  }
  EXPECT_EQ(actual, readTestFile(path)) << "UPDATE_GOLDEN=1 rewrites " << path;
}

TEST(ResourceSlice, A100PublishesTheEightDataPortsWithTheirAttributes) {
  const Json slice =
      resourceSlicesFor(discoverFixture("a100-roce"), defaultPluginConfig(), kOwner, 7)
          .slices.at(0);
  EXPECT_EQ(slice["spec"]["driver"], "rdma.kube-rdma.io");
  EXPECT_EQ(slice["spec"]["nodeName"], kTestNode);
  EXPECT_EQ(slice["spec"]["pool"],
            Json({{"name", kTestNode}, {"generation", 7}, {"resourceSliceCount", 1}}));
  EXPECT_EQ(slice["metadata"]["ownerReferences"][0]["uid"], kOwner.node_uid);
  EXPECT_EQ(slice["metadata"]["ownerReferences"][0]["kind"], "Node");
  const Json& devices = slice["spec"]["devices"];
  ASSERT_EQ(devices.size(), 8u); // mlx5_0, the management NIC, is left out
  std::set<std::string> rdma_devices;
  for (const auto& device : devices) {
    const Json& a = device["attributes"];
    rdma_devices.insert(a["rdmaDevice"]["string"].get<std::string>());
    EXPECT_LE(a.size(), kMaxAttributesPerDevice);
    for (const auto& [id, value] : a.items()) {
      const std::string bare = id.substr(id.find('/') + 1);
      EXPECT_LE(bare.size(), kMaxAttributeIdLength) << id;
      EXPECT_EQ(value.size(), 1u) << id;
    }
  }
  EXPECT_FALSE(rdma_devices.contains("mlx5_0"));
  const Json& first = devices[0];
  EXPECT_EQ(first["name"], "pci-0000-13-00-0-p1");
  const Json& a = first["attributes"];
  EXPECT_EQ(a["rdmaDevice"], Json({{"string", "mlx5_1"}}));
  EXPECT_EQ(a["port"], Json({{"int", 1}}));
  EXPECT_EQ(a["netdev"], Json({{"string", "eth1"}}));
  EXPECT_EQ(a["linkLayer"], Json({{"string", "Ethernet"}}));
  EXPECT_EQ(a["state"], Json({{"string", "ACTIVE"}}));
  EXPECT_EQ(a["ipv4"], Json({{"string", "25.11.128.2"}}));
  EXPECT_TRUE(a["gidIndex"].contains("int"));
  EXPECT_EQ(a["numaNode"], Json({{"int", 0}}));
  EXPECT_EQ(a["pciVendorID"], Json({{"string", "0x15b3"}}));
  EXPECT_EQ(a["resource.kubernetes.io/pciBusID"], Json({{"string", "0000:13:00.0"}}));
  // GPU i and NIC i share a root complex: pairs 0-3 on pci0000:00, 4-7 on pci0000:80.
  EXPECT_EQ(a["resource.kubernetes.io/pcieRoot"], Json({{"string", "pci0000:00"}}));
  EXPECT_EQ(devices[7]["attributes"]["resource.kubernetes.io/pcieRoot"],
            Json({{"string", "pci0000:80"}}));
}

// The kernel's own layout decides: the first component under sys/devices of the PCI function's
// resolved bus/pci/devices link, as Kubernetes' deviceattribute package reads it.
TEST(ResourceSlice, PcieRootIsTheFirstComponentOfTheResolvedPciLink) {
  const std::string sys = std::string(KUBE_RDMA_FIXTURES) + "/a100-roce/sys";
  const std::string devices = std::filesystem::canonical(sys + "/devices").string() + "/";
  const Json slice =
      resourceSlicesFor(discoverFixture("a100-roce"), defaultPluginConfig(), kOwner, 1)
          .slices.at(0);
  for (const auto& device : slice["spec"]["devices"]) {
    const Json& a = device["attributes"];
    const std::string bdf = a["resource.kubernetes.io/pciBusID"]["string"];
    const std::string resolved =
        std::filesystem::canonical(sys + "/bus/pci/devices/" + bdf).string();
    ASSERT_TRUE(resolved.starts_with(devices)) << resolved;
    const std::string relative = resolved.substr(devices.size());
    EXPECT_EQ(a["resource.kubernetes.io/pcieRoot"]["string"],
              relative.substr(0, relative.find('/')))
        << bdf;
  }
}

TEST(ResourceSlice, NumaNodeIsAbsentWhenTheKernelSaysNone) {
  const Json slice =
      resourceSlicesFor(discoverFixture("numa-none"), defaultPluginConfig(), kOwner, 1)
          .slices.at(0);
  ASSERT_FALSE(slice["spec"]["devices"].empty());
  for (const auto& device : slice["spec"]["devices"]) {
    EXPECT_FALSE(device["attributes"].contains("numaNode")) << device["name"];
  }
}

TEST(ResourceSlice, DeviceNamesAreStableDnsLabelsAcrossDiscoveries) {
  for (const char* fixture : {"a100-roce", "dual-port", "renamed-rocep", "soft-roce"}) {
    const auto names = [fixture] {
      std::vector<std::string> out;
      const auto set =
          resourceSlicesFor(discoverFixture(fixture), defaultPluginConfig(), kOwner, 1);
      for (const auto& device : set.slices.at(0)["spec"]["devices"]) {
        out.push_back(device["name"].get<std::string>());
      }
      return out;
    };
    const auto first = names();
    EXPECT_EQ(first, names()) << fixture;
    EXPECT_EQ(std::set<std::string>(first.begin(), first.end()).size(), first.size()) << fixture;
    for (const auto& name : first) {
      EXPECT_LE(name.size(), 63u);
      EXPECT_EQ(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-"), std::string::npos)
          << name;
    }
  }
}

TEST(ResourceSlice, DeviceNameComesFromThePciAddressOrTheKernelName) {
  RdmaDevice pci;
  pci.name = "mlx5_3";
  pci.pci_address = "0000:AB:00.1";
  EXPECT_EQ(draDeviceName(pci, 2), "pci-0000-ab-00-1-p2");
  RdmaDevice soft;
  soft.name = "rxe_Data.0";
  EXPECT_EQ(draDeviceName(soft, 1), "rdma-rxe-data-0-p1");
  soft.name = std::string(80, 'x');
  EXPECT_EQ(draDeviceName(soft, 1).size(), 63u);
}

// A node with `count` single-port RoCE HCAs (plain structs: the limit is about counting).
NodeTopology manyHcas(size_t count) {
  NodeTopology topology;
  for (size_t i = 0; i < count; ++i) {
    RdmaDevice d;
    d.name = "mlx5_" + std::to_string(i);
    char bdf[40]; // room for any size_t, which GCC's -Wformat-truncation asks for
    std::snprintf(bdf, sizeof bdf, "0000:%02zx:%02zx.0", i / 32, i % 32);
    d.pci_address = bdf;
    d.uverbs = "uverbs" + std::to_string(i);
    Port p;
    p.number = 1;
    p.state = PortState::kActive;
    p.link_layer = LinkLayer::kEthernet;
    p.netdev = "eth" + std::to_string(i);
    d.ports.push_back(p);
    topology.devices.push_back(d);
  }
  return topology;
}

TEST(ResourceSlice, MoreThan128DevicesGoIntoSeveralSlicesOfOnePool) {
  const SliceSet set = resourceSlicesFor(manyHcas(130), defaultPluginConfig(), kOwner, 3);
  ASSERT_EQ(set.slices.size(), 2u);
  EXPECT_EQ(set.slices[0]["spec"]["devices"].size(), 128u);
  EXPECT_EQ(set.slices[1]["spec"]["devices"].size(), 2u);
  for (const auto& slice : set.slices) {
    EXPECT_EQ(slice["spec"]["pool"]["resourceSliceCount"], 2);
    EXPECT_EQ(slice["spec"]["pool"]["generation"], 3);
  }
  EXPECT_EQ(resourceSlicesFor(manyHcas(128), defaultPluginConfig(), kOwner, 1).slices.size(), 1u);
}

TEST(ResourceSlice, ANodeWithoutPortsPublishesOneEmptySlice) {
  const SliceSet set = resourceSlicesFor(NodeTopology{}, defaultPluginConfig(), kOwner, 1);
  ASSERT_EQ(set.slices.size(), 1u);
  EXPECT_TRUE(set.slices[0]["spec"]["devices"].empty());
}

TEST(ResourceSlice, APortThatCannotServeIsTaintedNoScheduleWithItsReason) {
  NodeTopology topology = discoverFixture("port-down");
  topology.devices.back().uverbs.clear(); // mlx5_8: ACTIVE, but no device node to open
  const Json devices =
      resourceSlicesFor(topology, defaultPluginConfig(), kOwner, 1).slices.at(0)["spec"]["devices"];
  std::map<std::string, Json> taints;
  for (const Json& device : devices) {
    if (device.contains("taints")) {
      taints[device["attributes"]["rdmaDevice"]["string"]] = device["taints"];
    }
  }
  ASSERT_EQ(taints.size(), 2u) << devices.dump(2);
  const Json down = {
      {{"key", "rdma.kube-rdma.io/unhealthy"}, {"value", "DOWN"}, {"effect", "NoSchedule"}}};
  EXPECT_EQ(taints["mlx5_3"], down);
  EXPECT_EQ(taints["mlx5_8"][0]["value"], "NoUverbsDevice");
  EXPECT_EQ(portProblem(topology.devices.back(), topology.devices.back().ports[0])->message,
            "mlx5_8 has no uverbs device node");
}

// --share-ports: the ports of shared pools (the defaults' RoCE pool: eight HCAs, 16 tenants each
// as the device plugin's "auto" count, so 128) are allocatable to many claims; an exclusive pool's
// stay one claim's.
TEST(ResourceSlice, SharedPortsTakeTheSharedPoolsTenantsAndExclusiveOnesDoNot) {
  const NodeTopology topology = discoverFixture("a100-roce");
  const Json unshared = resourceSlicesFor(topology, defaultPluginConfig(), kOwner, 1)
                            .slices.at(0)["spec"]["devices"][0];
  EXPECT_FALSE(unshared.contains("allowMultipleAllocations"));
  EXPECT_FALSE(unshared.contains("capacity"));

  const Json shared = resourceSlicesFor(topology, defaultPluginConfig(), kOwner, 1, {true})
                          .slices.at(0)["spec"]["devices"][0];
  EXPECT_EQ(shared["allowMultipleAllocations"], true);
  EXPECT_EQ(shared["capacity"], Json::parse(R"({"tenants": {"value": "128",
      "requestPolicy": {"default": "1", "validRange": {"min": "1"}}}})"));

  PluginConfig exclusive = defaultPluginConfig();
  for (PoolSpec& pool : exclusive.pools) {
    pool.mode = PoolMode::kExclusive;
  }
  const Json one_claim =
      resourceSlicesFor(topology, exclusive, kOwner, 1, {true}).slices.at(0)["spec"]["devices"][0];
  EXPECT_FALSE(one_claim.contains("allowMultipleAllocations"));
}

TEST(ResourceSlice, AStringOverTheApisLimitIsLeftOutWithAWarning) {
  NodeTopology topology = manyHcas(1);
  topology.devices[0].fw_ver = std::string(65, '1');
  const SliceSet set = resourceSlicesFor(topology, defaultPluginConfig(), kOwner, 1);
  EXPECT_FALSE(set.slices[0]["spec"]["devices"][0]["attributes"].contains("firmware"));
  ASSERT_EQ(set.warnings.size(), 1u);
  EXPECT_NE(set.warnings[0].find("firmware"), std::string::npos);
}

} // namespace
} // namespace kube_rdma
