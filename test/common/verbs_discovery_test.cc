#include "common/verbs_discovery.h"

#include <gtest/gtest.h>
#include <sstream>

namespace kube_rdma {
namespace {

DiscoveryRoots a100() {
  const std::string base = std::string(KUBE_RDMA_FIXTURES) + "/a100-roce";
  return {base + "/sys", base + "/proc"};
}

// Stands in for libibverbs: what it lists and which sysfs root it belongs to.
class FakeSource final : public VerbsDeviceSource {
public:
  FakeSource(std::string root, Result<VerbsScan> result)
      : root_(std::move(root)), result_(std::move(result)) {}
  std::string sysfsRoot() const override { return root_; }
  Result<VerbsScan> scan() override {
    ++scans_;
    return result_;
  }
  int scans_ = 0;

private:
  std::string root_;
  Result<VerbsScan> result_;
};

RdmaDevice verbsDevice(const std::string& name) {
  RdmaDevice d;
  d.name = name;
  d.fw_ver = "20.99.0001"; // differs from sysfs: the kernel's text must win
  Port p;
  p.number = 1;
  p.state = PortState::kActive;
  p.link_layer = LinkLayer::kEthernet;
  p.gids.push_back(
      {3, "0000:0000:0000:0000:0000:ffff:190b:8002", GidType::kRoceV2, "", "25.11.128.2"});
  d.ports.push_back(p);
  return d;
}

TEST(VerbsDiscovery, AFixtureRootIsReadFromSysfsWithoutAskingLibibverbs) {
  std::ostringstream log;
  Logger logger(log);
  FakeSource source("/sys", VerbsScan{});
  const auto topo = discoverNode(a100(), logger, source);
  EXPECT_EQ(source.scans_, 0);
  EXPECT_EQ(topo.source, "sysfs");
  EXPECT_EQ(topo.devices.size(), 9u);
  EXPECT_NE(log.str().find("discovery from sysfs"), std::string::npos) << log.str();
}

TEST(VerbsDiscovery, TheSysfsFallbackReadsOnlyTheGidTablesItIsAskedFor) {
  std::ostringstream log;
  Logger logger(log);
  FakeSource source("/sys", VerbsScan{});
  const auto full = discoverNode(a100(), logger, source);
  const auto quick = discoverNode(a100(), logger, source, {GidTables::kFirstOnly, {}});
  ASSERT_EQ(quick.devices.size(), full.devices.size());
  for (size_t d = 0; d < full.devices.size(); ++d) {
    const Port& f = full.devices[d].ports[0];
    const Port& q = quick.devices[d].ports[0];
    EXPECT_GT(f.gids.size(), 1u) << full.devices[d].name;
    ASSERT_EQ(q.gids.size(), 1u) << quick.devices[d].name;
    EXPECT_EQ(q.netdev, f.netdev);
    EXPECT_EQ(q.gid_table_len, f.gid_table_len);
  }
}

TEST(VerbsDiscovery, FallsBackToSysfsAndSaysWhyWhenLibibverbsListsNothing) {
  std::ostringstream log;
  Logger logger(log);
  // What this machine's libibverbs answers without RDMA hardware or kernel support.
  FakeSource failing(a100().sysfs_root,
                     makeError("ibv_get_device_list failed: Function not implemented"));
  auto topo = discoverNode(a100(), logger, failing);
  EXPECT_EQ(failing.scans_, 1);
  EXPECT_EQ(topo.source, "sysfs");
  EXPECT_EQ(topo.devices.size(), 9u);
  EXPECT_NE(log.str().find("no RDMA devices via libibverbs"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("Function not implemented"), std::string::npos) << log.str();

  std::ostringstream log2;
  Logger logger2(log2);
  FakeSource empty(a100().sysfs_root, VerbsScan{});
  topo = discoverNode(a100(), logger2, empty);
  EXPECT_EQ(topo.source, "sysfs");
  EXPECT_NE(log2.str().find("libibverbs lists no devices"), std::string::npos) << log2.str();
}

TEST(VerbsDiscovery, VerbsDevicesAreCompletedWithSysfsFacts) {
  std::ostringstream log;
  Logger logger(log);
  VerbsScan scan;
  scan.devices = {verbsDevice("mlx5_2"), verbsDevice("mlx5_1")};
  FakeSource source(a100().sysfs_root, scan);
  const auto topo = discoverNode(a100(), logger, source);
  EXPECT_EQ(topo.source, "libibverbs");
  ASSERT_EQ(topo.devices.size(), 2u); // only what libibverbs lists, like NCCL sees
  const RdmaDevice& d = topo.devices[0];
  EXPECT_EQ(d.name, "mlx5_1");
  EXPECT_EQ(d.fw_ver, "20.31.1014"); // the kernel's text, not the provider's "20.99.0001"
  EXPECT_EQ(d.hca_type, "MT4123");
  EXPECT_EQ(d.numa_node, std::optional<int>(0));
  EXPECT_EQ(d.pcie_path.size(), 4u);
  EXPECT_EQ(d.netdevs, std::vector<std::string>{"eth1"});
  EXPECT_EQ(d.ports[0].netdev, "eth1");
  EXPECT_EQ(d.ports[0].gids.size(), 1u);
  EXPECT_EQ(topo.gpus.size(), 8u);
  EXPECT_EQ(topo.management_netdev, "eth0");
  // The seven sysfs devices libibverbs did not list are named.
  EXPECT_EQ(topo.warnings.size(), 7u);
  EXPECT_NE(topo.warnings[0].message.find("not listed by libibverbs"), std::string::npos);
}

TEST(VerbsDiscovery, RatesMatchTheKernelsText) {
  EXPECT_EQ(portRate(2, 64)->text, "200 Gb/sec (4X HDR)");
  EXPECT_EQ(portRate(2, 64)->gbps, 200u);
  EXPECT_EQ(portRate(2, 32)->text, "100 Gb/sec (4X EDR)");
  EXPECT_EQ(portRate(2, 128)->text, "400 Gb/sec (4X NDR)");
  EXPECT_EQ(portRate(2, 16)->text, "56 Gb/sec (4X FDR)");
  EXPECT_EQ(portRate(1, 1)->text, "2.5 Gb/sec (1X SDR)");
  EXPECT_EQ(portRate(8, 4)->text, "120 Gb/sec (12X QDR)");
  EXPECT_EQ(portRate(3, 64), std::nullopt);
  EXPECT_EQ(portRate(2, 0), std::nullopt);
}

TEST(VerbsDiscovery, EnumConversions) {
  EXPECT_EQ(gidTypeFromVerbs(0), GidType::kRoceV1); // IB GIDs print as "IB/RoCE v1"
  EXPECT_EQ(gidTypeFromVerbs(1), GidType::kRoceV1);
  EXPECT_EQ(gidTypeFromVerbs(2), GidType::kRoceV2);
  EXPECT_EQ(gidTypeFromVerbs(7), GidType::kUnknown);
  EXPECT_EQ(linkLayerFromVerbs(1), LinkLayer::kInfiniBand);
  EXPECT_EQ(linkLayerFromVerbs(2), LinkLayer::kEthernet);
  EXPECT_EQ(linkLayerFromVerbs(0), LinkLayer::kUnknown);
  EXPECT_EQ(physStateName(5), "LinkUp");
  EXPECT_EQ(physStateName(3), "Disabled");
  EXPECT_EQ(physStateName(42), "<unknown>");
  EXPECT_EQ(guidText(0x0c42a1030065d6b6ULL), "0c42:a103:0065:d6b6");
}

TEST(VerbsDiscovery, LibibverbsSourceAnswersWithoutCrashing) {
  // No assertion on the host's devices: only that the real library call completes and, when it
  // fails, says which call failed.
  LibibverbsSource source;
  EXPECT_EQ(source.sysfsRoot(), "/sys");
  auto scan = source.scan();
  if (!scan) {
    EXPECT_NE(scan.error().message.find("ibv_get_device_list"), std::string::npos);
  }
}

} // namespace
} // namespace kube_rdma
