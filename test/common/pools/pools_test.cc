#include "common/pools/pools.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "common/node/sysfs_attributes.h"
#include "common/node/sysfs_discovery.h"

namespace kube_rdma {
namespace {

Port port(uint32_t number, LinkLayer layer, const std::string& netdev,
          PortState state = PortState::kActive) {
  Port p;
  p.number = number;
  p.state = state;
  p.link_layer = layer;
  p.netdev = netdev;
  return p;
}

RdmaDevice device(const std::string& name, const std::string& pci, std::vector<Port> ports) {
  RdmaDevice d;
  d.name = name;
  d.pci_address = pci;
  d.vendor_id = "0x15b3";
  d.device_id = "0x101b";
  d.driver = "mlx5_core";
  for (const auto& p : ports) {
    d.netdevs.push_back(p.netdev);
  }
  d.ports = std::move(ports);
  return d;
}

// mlx5_0: management RoCE (eth0); mlx5_1: dual-port IB (ib0) + RoCE (eth1); mlx5_2: RoCE (eth2);
// mlx5_3: a RoCE VF of mlx5_2 (eth3).
NodeTopology mixedNode() {
  NodeTopology t;
  t.management_netdev = "eth0";
  t.devices = {
      device("mlx5_0", "0000:0c:00.0", {port(1, LinkLayer::kEthernet, "eth0")}),
      device("mlx5_1", "0000:13:00.0",
             {port(1, LinkLayer::kInfiniBand, "ib0"), port(2, LinkLayer::kEthernet, "eth1")}),
      device("mlx5_2", "0000:23:00.0", {port(1, LinkLayer::kEthernet, "eth2")}),
      device("mlx5_3", "0000:23:00.2", {port(1, LinkLayer::kEthernet, "eth3")}),
  };
  t.devices[3].is_vf = true;
  t.devices[3].device_id = "0x101c";
  return t;
}

const NodePool& poolNamed(const std::vector<NodePool>& pools, const std::string& name) {
  for (const auto& p : pools) {
    if (p.spec.resource_name == name) {
      return p;
    }
  }
  ADD_FAILURE() << "no pool " << name;
  return pools.front();
}

TEST(ManagementDevice, IsTheHcaCarryingTheDefaultRoute) {
  NodeTopology t = mixedNode();
  EXPECT_EQ(managementDevice(t), "mlx5_0");
  t.management_netdev = "eth2";
  EXPECT_EQ(managementDevice(t), "mlx5_2");
  t.management_netdev = "bond0"; // not on an RDMA device
  EXPECT_EQ(managementDevice(t), "");
  t.management_netdev = "";
  EXPECT_EQ(managementDevice(t), "");
}

TEST(BuildPools, DefaultsSplitADualPortHcaAndLeaveOutManagementAndVfs) {
  auto pools = buildPools(mixedNode(), defaultPluginConfig());
  ASSERT_EQ(pools.size(), 2u);
  EXPECT_EQ(poolNamed(pools, "rdma/hca").hcas, (std::vector<PoolHca>{{"mlx5_1", {1}}}));
  EXPECT_EQ(poolNamed(pools, "rdma/shared").hcas,
            (std::vector<PoolHca>{{"mlx5_1", {2}}, {"mlx5_2", {1}}}));
  EXPECT_EQ(poolNamed(pools, "rdma/shared").ports(),
            (std::vector<HcaPort>{{"mlx5_1", 2}, {"mlx5_2", 1}}));
}

TEST(BuildPools, SelectorsCanBringInManagementAndVfs) {
  PluginConfig config = defaultPluginConfig();
  config.pools[1].selector.include_management = true;
  config.pools[1].selector.include_vfs = true;
  auto pools = buildPools(mixedNode(), config);
  EXPECT_EQ(poolNamed(pools, "rdma/shared").deviceNames(),
            (std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}));
}

TEST(BuildPools, APortBelongsToTheFirstPoolThatSelectsIt) {
  auto config = parsePluginConfig(R"({"pools":[
      {"resourceName":"rdma/vf","selector":{"includeVFs":true,"deviceIDs":["0x101c"]}},
      {"resourceName":"rdma/any","selector":{"includeVFs":true}},
      {"resourceName":"rdma/never","selector":{"linkLayer":"Ethernet"}}]})");
  ASSERT_TRUE(config.ok()) << config.error().message;
  auto pools = buildPools(mixedNode(), *config);
  ASSERT_EQ(pools.size(), 3u);
  EXPECT_EQ(pools[0].deviceNames(), (std::vector<std::string>{"mlx5_3"}));
  EXPECT_EQ(pools[1].hcas, (std::vector<PoolHca>{{"mlx5_1", {1, 2}}, {"mlx5_2", {1}}}));
  EXPECT_TRUE(pools[2].hcas.empty());
}

// The selector of a one-pool config whose "selector" is `json`.
PoolSelector sel(const std::string& json) {
  auto c = parsePluginConfig(R"({"pools":[{"resourceName":"rdma/x","selector":)" + json + "}]}");
  EXPECT_TRUE(c.ok()) << json << ": " << c.error().message;
  return c.ok() ? c->pools[0].selector : PoolSelector{};
}

// Whether `selector` takes `port` of `device` (management and VF rules included).
bool selectorMatches(const PoolSelector& selector, const RdmaDevice& device, const Port& port,
                     bool is_management) {
  return !selectorRejection(selector, device, port, is_management).has_value();
}

TEST(SelectorMatches, EveryListMustMatch) {
  const NodeTopology t = mixedNode();
  const RdmaDevice& d = t.devices[2]; // mlx5_2, eth2
  const Port& p = d.ports[0];
  EXPECT_TRUE(selectorMatches(sel("{}"), d, p, false));
  EXPECT_TRUE(selectorMatches(sel(R"({"deviceNames":["mlx5_[2-4]"]})"), d, p, false));
  EXPECT_FALSE(selectorMatches(sel(R"({"deviceNames":["mlx5_1*"]})"), d, p, false));
  EXPECT_TRUE(selectorMatches(sel(R"({"netdevNames":["eth*"]})"), d, p, false));
  EXPECT_FALSE(selectorMatches(sel(R"({"netdevNames":["ens*"]})"), d, p, false));
  EXPECT_TRUE(
      selectorMatches(sel(R"({"vendors":["0x15B3"],"deviceIDs":["0x101b"]})"), d, p, false));
  EXPECT_FALSE(selectorMatches(sel(R"({"vendors":["0x8086"]})"), d, p, false));
  EXPECT_FALSE(selectorMatches(sel(R"({"deviceIDs":["0x1017"]})"), d, p, false));
  EXPECT_TRUE(selectorMatches(sel(R"({"drivers":["mlx5_core"]})"), d, p, false));
  EXPECT_FALSE(selectorMatches(sel(R"({"drivers":["irdma"]})"), d, p, false));
  EXPECT_TRUE(selectorMatches(sel(R"({"pciAddresses":["0000:23:00.0"]})"), d, p, false));
  EXPECT_FALSE(selectorMatches(sel(R"({"pciAddresses":["0000:13:00.0"]})"), d, p, false));
  EXPECT_FALSE(selectorMatches(sel(R"({"exclude":["mlx5_2"]})"), d, p, false));
  EXPECT_FALSE(selectorMatches(sel(R"({"linkLayer":"InfiniBand"})"), d, p, false));
  EXPECT_FALSE(selectorMatches(sel("{}"), d, p, true));
  EXPECT_TRUE(selectorMatches(sel(R"({"includeManagement":true})"), d, p, true));
}

TEST(SelectorRejection, NamesTheFirstRuleThatLeavesAPortOut) {
  const NodeTopology t = mixedNode();
  const RdmaDevice& d = t.devices[2]; // mlx5_2, eth2
  const Port& p = d.ports[0];
  const std::vector<std::pair<std::string, PoolRule>> cases = {
      {R"({"linkLayer":"InfiniBand"})", PoolRule::kLinkLayer},
      {R"({"deviceNames":["mlx5_1*"]})", PoolRule::kDeviceNames},
      {R"({"netdevNames":["ens*"]})", PoolRule::kNetdevNames},
      {R"({"vendors":["0x8086"]})", PoolRule::kVendors},
      {R"({"deviceIDs":["0x1017"]})", PoolRule::kDeviceIds},
      {R"({"drivers":["irdma"]})", PoolRule::kDrivers},
      {R"({"pciAddresses":["0000:13:00.0"]})", PoolRule::kPciAddresses},
      {R"({"exclude":["mlx5_2"]})", PoolRule::kExclude},
      // Management comes first, whatever else would also leave the port out.
  };
  for (const auto& [json, rule] : cases) {
    EXPECT_EQ(selectorRejection(sel(json), d, p, false), rule) << json;
  }
  EXPECT_EQ(selectorRejection(sel(R"({"exclude":["mlx5_2"]})"), d, p, true), PoolRule::kManagement);
  EXPECT_EQ(selectorRejection(sel("{}"), t.devices[3], t.devices[3].ports[0], false),
            PoolRule::kVf);
  EXPECT_EQ(selectorRejection(sel("{}"), d, p, false), std::nullopt);
  EXPECT_EQ(toString(PoolRule::kDeviceIds), "deviceIDs");
  EXPECT_EQ(toString(PoolRule::kEarlierPool), "taken by an earlier pool");
}

TEST(ExplainPools, SaysWhyEachPortIsNotInAPoolAndKeepsBuildPoolsResult) {
  auto config = parsePluginConfig(R"({"pools":[
      {"resourceName":"rdma/vf","selector":{"includeVFs":true,"deviceIDs":["0x101c"]}},
      {"resourceName":"rdma/any","selector":{"includeVFs":true}},
      {"resourceName":"rdma/never","selector":{"linkLayer":"Ethernet"}}]})");
  ASSERT_TRUE(config.ok()) << config.error().message;
  const NodeTopology t = mixedNode();
  const auto explained = explainPools(t, *config);
  const auto pools = buildPools(t, *config);
  ASSERT_EQ(explained.size(), 3u);
  for (size_t i = 0; i < pools.size(); ++i) {
    EXPECT_EQ(explained[i].pool, pools[i]);
  }
  // Rows of (device, port, rule, taken_by); LeftOutPort braces inline trip GCC 12's
  // -Wmaybe-uninitialized at -O3.
  const auto left_out =
      [](std::initializer_list<std::tuple<const char*, int, PoolRule, const char*>> rows) {
        std::vector<LeftOutPort> out;
        for (const auto& [device, port, rule, taken_by] : rows) {
          out.push_back({{device, static_cast<uint32_t>(port)}, rule, taken_by});
        }
        return out;
      };
  EXPECT_EQ(explained[0].left_out, left_out({{"mlx5_0", 1, PoolRule::kManagement, ""},
                                             {"mlx5_1", 1, PoolRule::kDeviceIds, ""},
                                             {"mlx5_1", 2, PoolRule::kDeviceIds, ""},
                                             {"mlx5_2", 1, PoolRule::kDeviceIds, ""}}));
  EXPECT_EQ(explained[1].left_out, left_out({{"mlx5_0", 1, PoolRule::kManagement, ""},
                                             {"mlx5_3", 1, PoolRule::kEarlierPool, "rdma/vf"}}));
  // rdma/never: the IB port by its link layer, the VF as a VF, the rest taken by rdma/any.
  EXPECT_EQ(explained[2].left_out, left_out({{"mlx5_0", 1, PoolRule::kManagement, ""},
                                             {"mlx5_1", 1, PoolRule::kLinkLayer, ""},
                                             {"mlx5_1", 2, PoolRule::kEarlierPool, "rdma/any"},
                                             {"mlx5_2", 1, PoolRule::kEarlierPool, "rdma/any"},
                                             {"mlx5_3", 1, PoolRule::kVf, ""}}));
}

NodePool sharedPool(const NodeTopology& t, const PluginConfig& config = defaultPluginConfig()) {
  return poolNamed(buildPools(t, config), "rdma/shared");
}

std::optional<std::string> settingOf(const NcclEnv& env, const std::string& name) {
  for (const auto& [n, v] : env) {
    if (n == name) {
      return v;
    }
  }
  return std::nullopt;
}

TEST(ComputeNcclSettings, ListsOnlyActivePoolPortsOfTheGrantedHcasInOrder) {
  NodeTopology t = mixedNode();
  const NodePool pool = sharedPool(t);
  auto env = computeNcclSettings(t, pool, {"mlx5_2", "mlx5_1"});
  ASSERT_TRUE(env.ok()) << env.error().message;
  EXPECT_EQ(*env, (NcclEnv{{"NCCL_IB_HCA", "=mlx5_1:2,mlx5_2:1"},
                           {"NCCL_IB_DISABLE", "0"},
                           {"NCCL_SOCKET_IFNAME", "=eth0"},
                           {"KUBE_RDMA_DEVICES", "mlx5_1,mlx5_2"},
                           {"KUBE_RDMA_NETDEVS", "eth1,eth2"}}));

  t.devices[1].ports[1].state = PortState::kDown; // mlx5_1 port 2 goes down after pooling
  auto down = computeNcclSettings(t, pool, {"mlx5_1", "mlx5_2"});
  ASSERT_TRUE(down.ok());
  EXPECT_EQ((*down)[0].second, "=mlx5_2:1");
  EXPECT_EQ(settingOf(*down, "KUBE_RDMA_DEVICES"), "mlx5_1,mlx5_2"); // still granted

  auto none = computeNcclSettings(t, pool, {"mlx5_1"});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no ACTIVE port of pool rdma/shared on mlx5_1"),
            std::string::npos)
      << none.error().message;
}

TEST(ComputeNcclSettings, RefusesDevicesOutsideThePool) {
  const NodeTopology t = mixedNode();
  auto env = computeNcclSettings(t, sharedPool(t), {"mlx5_0"});
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.error().message, "device mlx5_0 is not in pool rdma/shared");
}

GidEntry gid(uint32_t index, const std::string& text, GidType type) {
  return GidEntry{index, text, type, "", ""};
}

TEST(ComputeNcclSettings, GidIndexWhenThePortsAgreeUnlessAskedOtherwise) {
  NodeTopology t = mixedNode();
  const std::string v4 = "0000:0000:0000:0000:0000:ffff:1910:8002";
  t.devices[1].ports[1].gids = {gid(2, v4, GidType::kRoceV1), gid(3, v4, GidType::kRoceV2)};
  t.devices[2].ports[0].gids = {gid(2, v4, GidType::kRoceV1), gid(3, v4, GidType::kRoceV2)};
  t.addresses = {*parseGid(v4)}; // the GIDs are the host's own
  PluginConfig config = defaultPluginConfig();
  const auto find = settingOf;
  const std::vector<std::string> both{"mlx5_1", "mlx5_2"};
  EXPECT_EQ(find(*computeNcclSettings(t, sharedPool(t, config), both), "NCCL_IB_GID_INDEX"),
            "3"); // "agreed" by default

  config.pools[1].nccl.gid_index_mode = GidIndexMode::kUnset;
  EXPECT_EQ(find(*computeNcclSettings(t, sharedPool(t, config), both), "NCCL_IB_GID_INDEX"),
            std::nullopt);

  config.pools[1].nccl.gid_index_mode = GidIndexMode::kAgreed;

  t.devices[2].ports[0].gids[1].index = 5; // mlx5_2 now picks 5: no agreement
  EXPECT_EQ(find(*computeNcclSettings(t, sharedPool(t, config), both), "NCCL_IB_GID_INDEX"),
            std::nullopt);
  EXPECT_EQ(find(*computeNcclSettings(t, sharedPool(t, config), {"mlx5_2"}), "NCCL_IB_GID_INDEX"),
            "5");

  // An address of another namespace (a pod's macvlan on the port) is never the host's index.
  t.addresses.clear();
  EXPECT_EQ(find(*computeNcclSettings(t, sharedPool(t, config), {"mlx5_2"}), "NCCL_IB_GID_INDEX"),
            std::nullopt);

  config.pools[1].nccl.gid_index_mode = GidIndexMode::kFixed;
  config.pools[1].nccl.gid_index = 7;
  EXPECT_EQ(find(*computeNcclSettings(t, sharedPool(t, config), both), "NCCL_IB_GID_INDEX"), "7");
}

TEST(ComputeNcclSettings, AppendsThePoolsExtraEnvLast) {
  const NodeTopology t = mixedNode();
  PluginConfig config = defaultPluginConfig();
  config.pools[1].nccl.env = {{"NCCL_IB_TIMEOUT", "22"}};
  auto env = computeNcclSettings(t, sharedPool(t, config), {"mlx5_2"});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->back(), (std::pair<std::string, std::string>{"NCCL_IB_TIMEOUT", "22"}));
  EXPECT_TRUE(renderNcclConf(*env).ok());
}

// On the generated sysfs trees (test/fixtures/gen_sysfs.py).
NodeTopology fixture(const std::string& name) {
  const std::string root = std::string(KUBE_RDMA_FIXTURES) + "/" + name;
  return discoverFromSysfs(DiscoveryRoots{root + "/sys", root + "/proc"});
}

TEST(PoolsOnFixtures, A100RoceDefaultsGiveTheEightDataNics) {
  const NodeTopology t = fixture("a100-roce");
  auto pools = buildPools(t, defaultPluginConfig());
  EXPECT_TRUE(poolNamed(pools, "rdma/hca").hcas.empty());
  const NodePool& shared = poolNamed(pools, "rdma/shared");
  EXPECT_EQ(shared.deviceNames(),
            (std::vector<std::string>{"mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6",
                                      "mlx5_7", "mlx5_8"}));
  auto env = computeNcclSettings(t, shared, shared.deviceNames());
  ASSERT_TRUE(env.ok()) << env.error().message;
  EXPECT_EQ((*env)[0], (std::pair<std::string, std::string>{
                           "NCCL_IB_HCA", "=mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,"
                                          "mlx5_6:1,mlx5_7:1,mlx5_8:1"}));
  EXPECT_EQ(settingOf(*env, "KUBE_RDMA_NETDEVS"), "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8");
}

TEST(PoolsOnFixtures, A100RoceAgreesOnGidIndexThreeWithNoConfig) {
  const NodeTopology t = fixture("a100-roce");
  const NodePool shared = sharedPool(t);
  auto env = computeNcclSettings(t, shared, shared.deviceNames());
  ASSERT_TRUE(env.ok());
  EXPECT_EQ((*env)[2], (std::pair<std::string, std::string>{"NCCL_IB_GID_INDEX", "3"}));
}

// The interfaces a fixture node has (its /sys/class/net), as NCCL lists them on the host.
std::vector<std::string> hostInterfaces(const std::string& name) {
  std::vector<std::string> names;
  const std::string dir = std::string(KUBE_RDMA_FIXTURES) + "/" + name + "/sys/class/net";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// What NCCL_SOCKET_IFNAME selects where the container runs: on the host's network (hostNetwork)
// or on the pod network, whose interfaces are the CNI's eth0 and lo.
void expectSocketInterfaces(const std::string& fixture_name, const std::string& host_choice) {
  const NodeTopology t = fixture(fixture_name);
  const NodePool shared = sharedPool(t);
  auto env = computeNcclSettings(t, shared, shared.deviceNames());
  ASSERT_TRUE(env.ok()) << env.error().message;
  const auto value = settingOf(*env, "NCCL_SOCKET_IFNAME");
  ASSERT_TRUE(value.has_value());
  const NcclDeviceList list = parseNcclSocketIfname(*value);
  const std::vector<std::string> host = hostInterfaces(fixture_name);
  ASSERT_GT(host.size(), 2u);
  EXPECT_EQ(selectInterfaces(list, host), std::vector<std::string>{host_choice})
      << *value << " on the host of " << fixture_name;
  EXPECT_EQ(selectInterfaces(list, {"lo", "eth0"}), std::vector<std::string>{"eth0"})
      << *value << " in a pod";
}

TEST(PoolsOnFixtures, SocketInterfaceIsTheManagementNetdevOnTheHostAndEth0InAPod) {
  expectSocketInterfaces("a100-roce", "eth0");     // management netdev eth0: "=eth0"
  expectSocketInterfaces("renamed-rocep", "eno1"); // "=eno1,eth0"
}

TEST(ComputeNcclSettings, SocketInterfaceLeftToNcclWithoutADefaultRouteOrWhenThePoolSetsIt) {
  NodeTopology t = mixedNode();
  t.management_netdev = "";
  EXPECT_EQ(settingOf(*computeNcclSettings(t, sharedPool(t), {"mlx5_2"}), "NCCL_SOCKET_IFNAME"),
            std::nullopt);
  t.management_netdev = "bond0";
  EXPECT_EQ(settingOf(*computeNcclSettings(t, sharedPool(t), {"mlx5_2"}), "NCCL_SOCKET_IFNAME"),
            "=bond0,eth0");
  PluginConfig config = defaultPluginConfig();
  config.pools[1].nccl.env = {{"NCCL_SOCKET_IFNAME", "=bond1"}};
  auto env = computeNcclSettings(t, sharedPool(t, config), {"mlx5_2"});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(settingOf(*env, "NCCL_SOCKET_IFNAME"), "=bond1");
  EXPECT_TRUE(renderNcclConf(*env).ok()); // named once
}

TEST(PoolsOnFixtures, SparseGidTablesAgreeOnFive) {
  const NodeTopology t = fixture("sparse-gids");
  const NodePool shared = sharedPool(t);
  ASSERT_FALSE(shared.hcas.empty());
  auto env = computeNcclSettings(t, shared, shared.deviceNames());
  ASSERT_TRUE(env.ok());
  EXPECT_EQ((*env)[2], (std::pair<std::string, std::string>{"NCCL_IB_GID_INDEX", "5"}));
}

TEST(PoolsOnFixtures, InfiniBandNodeFillsRdmaHca) {
  const NodeTopology t = fixture("ib-hdr8");
  auto pools = buildPools(t, defaultPluginConfig());
  EXPECT_EQ(poolNamed(pools, "rdma/hca").hcas.size(), 8u);
  EXPECT_TRUE(poolNamed(pools, "rdma/shared").hcas.empty());
}

TEST(PoolsOnFixtures, DualPortHcaHasAPortInEachPool) {
  const NodeTopology t = fixture("dual-port");
  auto pools = buildPools(t, defaultPluginConfig());
  EXPECT_EQ(poolNamed(pools, "rdma/hca").ports(), (std::vector<HcaPort>{{"mlx5_0", 1}}));
  EXPECT_EQ(poolNamed(pools, "rdma/shared").ports(), (std::vector<HcaPort>{{"mlx5_0", 2}}));
  auto env = computeNcclSettings(t, poolNamed(pools, "rdma/hca"), {"mlx5_0"});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ((*env)[0].second, "=mlx5_0:1");
}

TEST(PoolsOnFixtures, DownPortIsPooledButNotHandedToNccl) {
  const NodeTopology t = fixture("port-down");
  const NodePool shared = sharedPool(t);
  EXPECT_EQ(shared.hcas.size(), 8u);
  auto env = computeNcclSettings(t, shared, shared.deviceNames());
  ASSERT_TRUE(env.ok());
  EXPECT_EQ((*env)[0].second.find("mlx5_3"), std::string::npos) << (*env)[0].second;
  EXPECT_EQ(parseNcclIbHca((*env)[0].second).entries.size(), 7u);
}

TEST(PoolsOnFixtures, VfsStayOutByDefault) {
  const NodeTopology t = fixture("sriov-vfs");
  EXPECT_EQ(sharedPool(t).deviceNames(), (std::vector<std::string>{"mlx5_0"}));
}

TEST(PoolsOnFixtures, SoftRoceJoinsTheDefaultPoolButNotOneThatNamesADriver) {
  const NodeTopology t = fixture("soft-roce");
  EXPECT_EQ(sharedPool(t).deviceNames(), (std::vector<std::string>{"mlx5_0", "rxe0"}));
  const NodePool both = sharedPool(t);
  auto env = computeNcclSettings(t, both, both.deviceNames());
  ASSERT_TRUE(env.ok());
  // mlx5_0's IPv4 RoCE v2 GID is at 3, rxe0's (v2 GIDs only) at 1: no index to agree on.
  for (const auto& [name, value] : *env) {
    EXPECT_NE(name, "NCCL_IB_GID_INDEX") << value;
  }
  PluginConfig config = defaultPluginConfig();
  config.pools[1].selector.drivers = {"mlx5_core"};
  EXPECT_EQ(sharedPool(t, config).deviceNames(), (std::vector<std::string>{"mlx5_0"}));
  config.pools[1].selector.drivers.clear();
  config.pools[1].selector.netdev_names = {"eth1"}; // rxe0's parent
  EXPECT_EQ(sharedPool(t, config).deviceNames(), (std::vector<std::string>{"rxe0"}));
}

TEST(PoolsOnFixtures, TensComeAfterTheOnesAndExactNamesKeepThemApart) {
  const NodeTopology t = fixture("mlx5-1-10");
  const NodePool shared = sharedPool(t);
  auto env = computeNcclSettings(t, shared, {"mlx5_1"});
  ASSERT_TRUE(env.ok());
  const auto selection = selectHcaPorts(t, parseNcclIbHca((*env)[0].second));
  EXPECT_EQ(selection.selected, (std::vector<HcaPort>{{"mlx5_1", 1}}));
  EXPECT_EQ(selectHcaPorts(t, parseNcclIbHca("mlx5_1")).selected.size(), 3u); // 1, 10, 11
}

} // namespace
} // namespace kube_rdma
