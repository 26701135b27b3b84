#include "common/node/verbs_discovery.h"

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

// Discovery that must not fail (auto and sysfs never do).
NodeTopology discovered(Result<NodeTopology> result) {
  EXPECT_TRUE(result.ok()) << result.error().message;
  return result.ok() ? std::move(*result) : NodeTopology{};
}

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
  const auto topo = discovered(discoverNode(a100(), DiscoveryBackend::kAuto, logger, source));
  EXPECT_EQ(source.scans_, 0);
  EXPECT_EQ(topo.source, "sysfs");
  EXPECT_EQ(topo.devices.size(), 9u);
  EXPECT_NE(log.str().find("backend=sysfs discovery=auto reason=\"the sysfs root is not the one "
                           "libibverbs reads"),
            std::string::npos)
      << log.str();
}

TEST(VerbsDiscovery, TheSysfsFallbackReadsOnlyTheGidTablesItIsAskedFor) {
  std::ostringstream log;
  Logger logger(log);
  FakeSource source("/sys", VerbsScan{});
  const auto full = discovered(discoverNode(a100(), DiscoveryBackend::kAuto, logger, source));
  const auto quick = discovered(
      discoverNode(a100(), DiscoveryBackend::kAuto, logger, source, {GidTables::kFirstOnly, {}}));
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
  auto topo = discovered(discoverNode(a100(), DiscoveryBackend::kAuto, logger, failing));
  EXPECT_EQ(failing.scans_, 1);
  EXPECT_EQ(topo.source, "sysfs");
  EXPECT_EQ(topo.devices.size(), 9u);
  EXPECT_NE(log.str().find("backend=sysfs discovery=auto"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("Function not implemented"), std::string::npos) << log.str();

  std::ostringstream log2;
  Logger logger2(log2);
  FakeSource empty(a100().sysfs_root, VerbsScan{});
  topo = discovered(discoverNode(a100(), DiscoveryBackend::kAuto, logger2, empty));
  EXPECT_EQ(topo.source, "sysfs");
  EXPECT_NE(log2.str().find("libibverbs lists no devices"), std::string::npos) << log2.str();
}

TEST(VerbsDiscovery, VerbsDevicesAreCompletedWithSysfsFacts) {
  std::ostringstream log;
  Logger logger(log);
  VerbsScan scan;
  scan.devices = {verbsDevice("mlx5_2"), verbsDevice("mlx5_1")};
  FakeSource source(a100().sysfs_root, scan);
  const auto topo = discovered(discoverNode(a100(), DiscoveryBackend::kAuto, logger, source));
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

TEST(VerbsDiscovery, TheSysfsBackendNeverAsksLibibverbs) {
  std::ostringstream log;
  Logger logger(log);
  VerbsScan scan;
  scan.devices = {verbsDevice("mlx5_1")};
  FakeSource source(a100().sysfs_root, scan); // would serve under auto
  const auto topo = discovered(discoverNode(a100(), DiscoveryBackend::kSysfs, logger, source));
  EXPECT_EQ(source.scans_, 0);
  EXPECT_EQ(topo.source, "sysfs");
  EXPECT_EQ(topo.devices.size(), 9u);
  EXPECT_NE(log.str().find("discovery backend\" backend=sysfs discovery=sysfs"), std::string::npos)
      << log.str();
}

TEST(VerbsDiscovery, TheVerbsBackendServesAndSaysSo) {
  std::ostringstream log;
  Logger logger(log);
  VerbsScan scan;
  scan.devices = {verbsDevice("mlx5_1")};
  FakeSource source(a100().sysfs_root + "/", scan); // SYSFS_PATH=/host/sys/ is the same root
  auto topo = discoverNode(a100(), DiscoveryBackend::kVerbs, logger, source);
  ASSERT_TRUE(topo.ok()) << topo.error().message;
  EXPECT_EQ(topo->source, "libibverbs");
  EXPECT_EQ(topo->devices.size(), 1u);
  EXPECT_NE(log.str().find("backend=libibverbs discovery=verbs"), std::string::npos) << log.str();
}

// --discovery=verbs never falls back: each way libibverbs cannot serve is an error saying why.
TEST(VerbsDiscovery, TheVerbsBackendFailsNamingWhyLibibverbsCannotServe) {
  std::ostringstream log;
  Logger logger(log);
  VerbsScan listed;
  listed.devices = {verbsDevice("mlx5_1")};
  FakeSource other_root("/sys", listed);
  auto topo = discoverNode(a100(), DiscoveryBackend::kVerbs, logger, other_root);
  ASSERT_FALSE(topo.ok());
  EXPECT_EQ(other_root.scans_, 0);
  EXPECT_EQ(topo.error().message,
            "--discovery=verbs: libibverbs reads sysfs at /sys but --sysfs-root is " +
                a100().sysfs_root + ": set SYSFS_PATH=" + a100().sysfs_root +
                " in the environment");

  FakeSource failing(a100().sysfs_root,
                     makeError("ibv_get_device_list failed: Function not implemented"));
  topo = discoverNode(a100(), DiscoveryBackend::kVerbs, logger, failing);
  ASSERT_FALSE(topo.ok());
  EXPECT_EQ(topo.error().message,
            "--discovery=verbs: ibv_get_device_list failed: Function not implemented");

  FakeSource none(a100().sysfs_root, VerbsScan{});
  topo = discoverNode(a100(), DiscoveryBackend::kVerbs, logger, none);
  ASSERT_FALSE(topo.ok());
  const std::string& why = topo.error().message;
  EXPECT_EQ(why.rfind("--discovery=verbs: libibverbs lists no RDMA device; it lists only the "
                      "devices whose node is in /dev/infiniband, and sysfs at " +
                          a100().sysfs_root + " has mlx5_0 (/dev/infiniband/uverbs0), ",
                      0),
            0u)
      << why;
  EXPECT_NE(why.find(": mount the host's /dev/infiniband at /dev/infiniband"), std::string::npos)
      << why;

  VerbsScan refused = listed;
  refused.unusable = {{"mlx5_2", "open /dev/infiniband/uverbs2: Operation not permitted"}};
  FakeSource cgroup(a100().sysfs_root, refused);
  topo = discoverNode(a100(), DiscoveryBackend::kVerbs, logger, cgroup);
  ASSERT_FALSE(topo.ok());
  EXPECT_EQ(topo.error().message, "--discovery=verbs: libibverbs cannot open mlx5_2: open "
                                  "/dev/infiniband/uverbs2: Operation not permitted");
}

TEST(VerbsDiscovery, AutoLeavesOutADeviceLibibverbsCannotOpenWithAWarning) {
  std::ostringstream log;
  Logger logger(log);
  VerbsScan scan;
  scan.devices = {verbsDevice("mlx5_1")};
  scan.unusable = {{"mlx5_2", "open /dev/infiniband/uverbs2: Operation not permitted"}};
  FakeSource source(a100().sysfs_root, scan);
  const auto topo = discovered(discoverNode(a100(), DiscoveryBackend::kAuto, logger, source));
  EXPECT_EQ(topo.source, "libibverbs");
  ASSERT_EQ(topo.devices.size(), 1u);
  bool named = false;
  for (const auto& w : topo.warnings) {
    named = named ||
            (w.path == "mlx5_2" && w.message.find("Operation not permitted") != std::string::npos);
  }
  EXPECT_TRUE(named);
}

TEST(VerbsDiscovery, BackendNamesAndTheSysfsRootLibibverbsReads) {
  for (const auto backend :
       {DiscoveryBackend::kAuto, DiscoveryBackend::kSysfs, DiscoveryBackend::kVerbs}) {
    EXPECT_EQ(parseDiscoveryBackend(toString(backend)).value(), backend);
  }
  for (const char* bad : {"", "Verbs", "libibverbs", "sysfs,verbs"}) {
    auto parsed = parseDiscoveryBackend(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.error().message,
              "'" + std::string(bad) + "' is not one of sysfs, verbs, auto");
  }
  EXPECT_EQ(libibverbsSysfsRoot(nullptr), "/sys");
  EXPECT_EQ(libibverbsSysfsRoot("/host/sys"), "/host/sys");
  EXPECT_EQ(libibverbsSysfsRoot("/host/sys//"), "/host/sys");
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
