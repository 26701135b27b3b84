#include "common/node/sysfs_discovery.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

namespace kube_rdma {
namespace {

namespace fs = std::filesystem;

DiscoveryRoots fixtureRoots(const std::string& name) {
  const std::string base = std::string(KUBE_RDMA_FIXTURES) + "/" + name;
  return {base + "/sys", base + "/proc"};
}

NodeTopology discoverFixture(const std::string& name) {
  return discoverFromSysfs(fixtureRoots(name));
}

std::vector<std::string> names(const NodeTopology& topo) {
  std::vector<std::string> out;
  for (const auto& d : topo.devices) {
    out.push_back(d.name);
  }
  return out;
}

std::string warningsText(const NodeTopology& topo) {
  std::string out;
  for (const auto& w : topo.warnings) {
    out += w.path + ": " + w.message + "\n";
  }
  return out;
}

// A private copy of a fixture that a test may damage.
class FixtureCopy {
public:
  explicit FixtureCopy(const std::string& name) {
    // tmpfs when there is one: a fixture copy is thousands of small files.
    const fs::path base =
        ::access("/dev/shm", W_OK) == 0 ? fs::path("/dev/shm") : fs::path(::testing::TempDir());
    root_ = base / ("disc-" + std::to_string(::getpid()) + "-" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::copy(fs::path(KUBE_RDMA_FIXTURES) / name, root_,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  ~FixtureCopy() { fs::remove_all(root_); }
  DiscoveryRoots roots() const { return {(root_ / "sys").string(), (root_ / "proc").string()}; }
  fs::path sys(const std::string& rel) const { return root_ / "sys" / rel; }

private:
  fs::path root_;
};

TEST(SysfsDiscovery, A100NodeMatchesTheGuide) {
  const auto topo = discoverFixture("a100-roce");
  EXPECT_TRUE(topo.warnings.empty()) << warningsText(topo);
  EXPECT_EQ(topo.source, "sysfs");
  EXPECT_EQ(names(topo), (std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4",
                                                   "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8"}));
  EXPECT_EQ(topo.management_netdev, "eth0");
  ASSERT_EQ(topo.gpus.size(), 8u);
  EXPECT_EQ(topo.gpus[0].device_id, "0x20b0");

  const RdmaDevice& d = *topo.findDevice("mlx5_1");
  EXPECT_EQ(d.hca_type, "MT4123");
  EXPECT_EQ(d.vendor_id, "0x15b3");
  EXPECT_EQ(d.device_id, "0x101b");
  EXPECT_EQ(d.driver, "mlx5_core");
  EXPECT_EQ(d.numa_node, std::optional<int>(0));
  EXPECT_EQ(d.netdevs, std::vector<std::string>{"eth1"});
  EXPECT_FALSE(d.uverbs.empty());
  EXPECT_EQ(d.uverbsDevicePath(), "/dev/infiniband/" + d.uverbs);
  EXPECT_EQ(d.pci_address, d.pcie_path.back());
  EXPECT_EQ(d.pcie_path.size(), 4u); // root port, switch up, switch down, NIC
  EXPECT_FALSE(d.is_vf);
  ASSERT_EQ(d.ports.size(), 1u);
  const Port& p = d.ports[0];
  EXPECT_TRUE(p.active());
  EXPECT_EQ(p.phys_state, 5);
  EXPECT_EQ(p.phys_state_name, "LinkUp");
  EXPECT_EQ(p.link_layer, LinkLayer::kEthernet);
  EXPECT_EQ(p.rate_gbps, 200u);
  EXPECT_EQ(p.gid_table_len, 256u);
  EXPECT_EQ(p.netdev, "eth1");
  ASSERT_EQ(p.gids.size(), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(p.gids[i].index, i);
    EXPECT_EQ(p.gids[i].type, i % 2 == 0 ? GidType::kRoceV1 : GidType::kRoceV2);
    EXPECT_EQ(p.gids[i].netdev, "eth1");
  }
  EXPECT_EQ(p.gids[0].gid.substr(0, 20), "fe80:0000:0000:0000:");
  EXPECT_EQ(p.gids[0].ipv4, "");
  EXPECT_EQ(p.gids[2].gid, "0000:0000:0000:0000:0000:ffff:190b:8002");
  EXPECT_EQ(p.gids[2].ipv4, "25.11.128.2");
  EXPECT_EQ(p.gids[3].ipv4, "25.11.128.2");

  const std::vector<std::string> ips{"25.11.128.2",   "25.11.128.34",  "25.11.128.66",
                                     "25.11.128.98",  "25.11.128.130", "25.11.128.162",
                                     "25.11.128.194", "25.11.128.226"};
  for (size_t i = 0; i < ips.size(); ++i) {
    const RdmaDevice& nic = topo.devices[i + 1];
    EXPECT_EQ(nic.ports[0].gids[3].ipv4, ips[i]) << nic.name;
    EXPECT_EQ(nic.numa_node, std::optional<int>(i < 4 ? 0 : 1)) << nic.name;
  }
  EXPECT_EQ(topo.devices[0].ports[0].gids[3].ipv4, "10.0.60.3");
  EXPECT_EQ(topo.devices[0].pcie_path.size(), 2u); // directly under a root port
}

TEST(SysfsDiscovery, FirstGidOnlyStillNamesEveryPortsNetdev) {
  for (const char* name : {"a100-roce", "ib-hdr8", "dual-port"}) {
    const auto full = discoverFixture(name);
    const auto quick = discoverFromSysfs(fixtureRoots(name), {GidTables::kFirstOnly, {}});
    EXPECT_TRUE(quick.warnings.empty()) << warningsText(quick);
    ASSERT_EQ(quick.devices.size(), full.devices.size()) << name;
    for (size_t d = 0; d < full.devices.size(); ++d) {
      for (size_t p = 0; p < full.devices[d].ports.size(); ++p) {
        const Port& q = quick.devices[d].ports[p];
        EXPECT_EQ(q.netdev, full.devices[d].ports[p].netdev) << name;
        EXPECT_EQ(q.gid_table_len, full.devices[d].ports[p].gid_table_len) << name;
        ASSERT_EQ(q.gids.size(), 1u) << name;
        EXPECT_EQ(q.gids[0].index, 0u);
      }
    }
  }
}

GidSelectionPolicy policyFor(GidFamily family, GidType version, const char* range = nullptr) {
  GidSelectionPolicy policy{family, version, std::nullopt};
  if (range != nullptr) {
    policy.range = parseCidr(range).value();
  }
  return policy;
}

// Stopping each table at the entry NCCL's rule picks must not change the pick: each policy, scanned
// alone and with all the others, picks the same index on every port as over the whole table.
TEST(SysfsDiscovery, ReadingUntilSelectedPicksWhatTheWholeTablePicks) {
  const std::vector<GidSelectionPolicy> policies = {
      policyFor(GidFamily::kIPv4, GidType::kRoceV2),
      policyFor(GidFamily::kIPv6, GidType::kRoceV2),
      policyFor(GidFamily::kIPv4, GidType::kRoceV1),
      policyFor(GidFamily::kIPv4, GidType::kRoceV2, "26.3.2.9/32"), // a late entry, large-16x2
      policyFor(GidFamily::kIPv6, GidType::kRoceV2, "2001:db8:5::/48"),
      policyFor(GidFamily::kIPv4, GidType::kRoceV2, "192.0.2.0/24"), // nothing: whole table
  };
  std::vector<std::vector<GidSelectionPolicy>> scans;
  scans.reserve(policies.size() + 1);
  for (const auto& policy : policies) {
    scans.push_back({policy});
  }
  scans.push_back(policies);
  for (const char* name : {"a100-roce", "sparse-gids", "dual-port", "large-16x2", "ib-hdr8"}) {
    const auto full = discoverFixture(name);
    for (const auto& selecting : scans) {
      const auto quick =
          discoverFromSysfs(fixtureRoots(name), {GidTables::kUntilSelected, selecting});
      EXPECT_TRUE(quick.warnings.empty()) << warningsText(quick);
      ASSERT_EQ(quick.devices.size(), full.devices.size()) << name;
      for (size_t d = 0; d < full.devices.size(); ++d) {
        for (size_t p = 0; p < full.devices[d].ports.size(); ++p) {
          const Port& f = full.devices[d].ports[p];
          const Port& q = quick.devices[d].ports[p];
          EXPECT_EQ(q.netdev, f.netdev) << name;
          EXPECT_EQ(q.gid_table_len, f.gid_table_len) << name;
          EXPECT_LE(q.gids.size(), f.gids.size()) << name;
          for (const auto& policy : selecting) {
            EXPECT_EQ(selectGidIndex(q, policy), selectGidIndex(f, policy))
                << name << " " << full.devices[d].name << " port " << f.number;
          }
        }
      }
    }
  }
}

TEST(SysfsDiscovery, ReadingUntilSelectedStopsAtTheChosenEntry) {
  const auto ipv4 = policyFor(GidFamily::kIPv4, GidType::kRoceV2);
  const auto nothing = policyFor(GidFamily::kIPv4, GidType::kRoceV2, "192.0.2.0/24");
  const auto full = discoverFixture("a100-roce");
  const auto quick =
      discoverFromSysfs(fixtureRoots("a100-roce"), {GidTables::kUntilSelected, {ipv4}});
  const auto whole =
      discoverFromSysfs(fixtureRoots("a100-roce"), {GidTables::kUntilSelected, {ipv4, nothing}});
  for (size_t d = 0; d < full.devices.size(); ++d) {
    const Port& q = quick.devices[d].ports[0];
    // 0/1 link-local v1/v2, 2/3 the IPv4 address as v1/v2: the scan ends at 3.
    ASSERT_EQ(q.gids.size(), 4u) << quick.devices[d].name;
    EXPECT_EQ(q.gids.back().index, 3u);
    EXPECT_EQ(whole.devices[d].ports[0].gids.size(), full.devices[d].ports[0].gids.size());
  }
}

TEST(SysfsDiscovery, InfiniBandNodeUsesIpoibNetdevsAndLids) {
  const auto topo = discoverFixture("ib-hdr8");
  EXPECT_TRUE(topo.warnings.empty()) << warningsText(topo);
  ASSERT_EQ(topo.devices.size(), 8u);
  EXPECT_EQ(topo.management_netdev, "eth0");
  for (size_t i = 0; i < 8; ++i) {
    const Port& p = topo.devices[i].ports.at(0);
    EXPECT_EQ(p.link_layer, LinkLayer::kInfiniBand);
    EXPECT_EQ(p.lid, i + 1);
    EXPECT_EQ(p.netdev, "ib" + std::to_string(i));
    ASSERT_EQ(p.gids.size(), 1u);
    EXPECT_EQ(p.gids[0].netdev, ""); // ndevs reads EINVAL for IB GIDs
    EXPECT_EQ(p.gids[0].type, GidType::kRoceV1);
    EXPECT_EQ(p.gid_table_len, 128u);
  }
}

TEST(SysfsDiscovery, DualPortHcaHasAPortOfEachLinkLayer) {
  const auto topo = discoverFixture("dual-port");
  EXPECT_TRUE(topo.warnings.empty()) << warningsText(topo);
  ASSERT_EQ(topo.devices.size(), 1u);
  const auto& ports = topo.devices[0].ports;
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[0].link_layer, LinkLayer::kInfiniBand);
  EXPECT_EQ(ports[0].netdev, "ib0");
  EXPECT_EQ(ports[1].link_layer, LinkLayer::kEthernet);
  EXPECT_EQ(ports[1].netdev, "eth1");
  EXPECT_EQ(ports[1].gids.at(3).ipv4, "192.168.50.2");
}

TEST(SysfsDiscovery, PortDownIsReportedDown) {
  const auto topo = discoverFixture("port-down");
  const Port& p = topo.findDevice("mlx5_3")->ports.at(0);
  EXPECT_EQ(p.state, PortState::kDown);
  EXPECT_EQ(p.phys_state_name, "Disabled");
  EXPECT_TRUE(topo.findDevice("mlx5_2")->ports.at(0).active());
}

TEST(SysfsDiscovery, NumaMinusOneIsNone) {
  const auto topo = discoverFixture("numa-none");
  EXPECT_TRUE(topo.warnings.empty() ||
              topo.warnings.front().path.find("route") != std::string::npos)
      << warningsText(topo);
  ASSERT_EQ(topo.devices.size(), 2u);
  EXPECT_EQ(topo.devices[0].numa_node, std::nullopt);
  ASSERT_EQ(topo.gpus.size(), 2u);
  EXPECT_EQ(topo.gpus[0].numa_node, std::nullopt);
}

TEST(SysfsDiscovery, RenamedDevicesKeepTheirUdevNames) {
  const auto topo = discoverFixture("renamed-rocep");
  EXPECT_TRUE(topo.warnings.empty()) << warningsText(topo);
  EXPECT_EQ(names(topo),
            (std::vector<std::string>{"rocep1s0f0", "rocep2s0f0", "rocep3s0f0", "rocep4s0f0"}));
  EXPECT_EQ(topo.devices[0].ports[0].netdev, "enp1s0f0np0");
  EXPECT_EQ(topo.devices[0].pci_address, "0000:01:00.0");
  EXPECT_EQ(topo.management_netdev, "eno1");
}

TEST(SysfsDiscovery, Mlx5OneAndTenAreSortedNaturally) {
  const auto topo = discoverFixture("mlx5-1-10");
  ASSERT_EQ(topo.devices.size(), 12u);
  EXPECT_EQ(topo.devices[1].name, "mlx5_1");
  EXPECT_EQ(topo.devices[2].name, "mlx5_2");
  EXPECT_EQ(topo.devices[10].name, "mlx5_10");
  EXPECT_EQ(topo.devices[10].ports[0].netdev, "eth10");
}

TEST(SysfsDiscovery, SparseGidTableSkipsEinvalEntriesWithoutWarnings) {
  const auto topo = discoverFixture("sparse-gids");
  EXPECT_TRUE(topo.warnings.empty()) << warningsText(topo);
  const Port& p = topo.devices.at(0).ports.at(0);
  std::vector<uint32_t> indexes;
  for (const auto& g : p.gids) {
    indexes.push_back(g.index);
  }
  EXPECT_EQ(indexes, (std::vector<uint32_t>{0, 1, 4, 5}));
  EXPECT_EQ(p.gids[2].ipv4, "10.152.0.12");
  EXPECT_EQ(p.gids[3].type, GidType::kRoceV2);
}

TEST(SysfsDiscovery, SriovVfsKnowTheirPhysicalFunction) {
  const auto topo = discoverFixture("sriov-vfs");
  ASSERT_EQ(topo.devices.size(), 5u);
  const RdmaDevice& pf = topo.devices[0];
  EXPECT_FALSE(pf.is_vf);
  EXPECT_EQ(pf.vf_pci_addresses, (std::vector<std::string>{"0000:3b:00.1", "0000:3b:00.2",
                                                           "0000:3b:00.3", "0000:3b:00.4"}));
  for (size_t i = 1; i < 5; ++i) {
    EXPECT_TRUE(topo.devices[i].is_vf);
    EXPECT_EQ(topo.devices[i].pf_pci_address, "0000:3b:00.0");
    EXPECT_EQ(topo.devices[i].hca_type, "MT4124");
  }
}

TEST(SysfsDiscovery, SoftRoceDeviceHasNoPciFunctionButItsParentNetdevAndUverbs) {
  const auto topo = discoverFixture("soft-roce");
  EXPECT_TRUE(topo.warnings.empty()) << warningsText(topo);
  ASSERT_EQ(names(topo), (std::vector<std::string>{"mlx5_0", "rxe0"}));
  const RdmaDevice& rxe = topo.devices[1];
  EXPECT_EQ(rxe.node_guid, "0000:00ff:fe00:0001");
  EXPECT_EQ(rxe.fw_ver, "");
  EXPECT_EQ(rxe.hca_type, "");
  EXPECT_EQ(rxe.pci_address, "");
  EXPECT_EQ(rxe.driver, "");
  EXPECT_EQ(rxe.numa_node, std::nullopt);
  EXPECT_EQ(rxe.netdevs, (std::vector<std::string>{"eth1"}));
  EXPECT_EQ(rxe.uverbs, "uverbs1");
  ASSERT_EQ(rxe.ports.size(), 1u);
  const Port& port = rxe.ports[0];
  EXPECT_EQ(port.netdev, "eth1");
  EXPECT_EQ(port.rate_gbps, 2u);   // "2.5 Gb/sec (1X SDR)": whole Gb/s
  ASSERT_EQ(port.gids.size(), 3u); // of 1024 entries, RoCE v2 only
  EXPECT_EQ(port.gids[1].index, 1u);
  EXPECT_EQ(port.gids[1].type, GidType::kRoceV2);
  EXPECT_EQ(port.gids[1].ipv4, "10.20.0.5");
  EXPECT_EQ(topo.devices[0].uverbs, "uverbs0");
  EXPECT_EQ(topo.devices[0].netdevs, (std::vector<std::string>{"eth2"}));
}

TEST(SysfsDiscovery, UverbsDevicesAreMatchedByTheirIbdevAttribute) {
  FixtureCopy copy("soft-roce");
  // Swap which uverbs device belongs to which RDMA device: only ibdev says.
  std::ofstream(copy.sys("class/infiniband_verbs/uverbs0/ibdev"), std::ios::trunc) << "rxe0\n";
  std::ofstream(copy.sys("class/infiniband_verbs/uverbs1/ibdev"), std::ios::trunc) << "mlx5_0\n";
  fs::remove_all(copy.sys("class/infiniband_verbs/uverbs7"));
  fs::create_directories(copy.sys("class/infiniband_verbs/uverbs7"));
  const auto topo = discoverFromSysfs(copy.roots());
  ASSERT_EQ(names(topo), (std::vector<std::string>{"mlx5_0", "rxe0"}));
  EXPECT_EQ(topo.devices[0].uverbs, "uverbs1");
  EXPECT_EQ(topo.devices[1].uverbs, "uverbs0");
  // A uverbs device without a readable ibdev is skipped with a warning naming it.
  ASSERT_EQ(topo.warnings.size(), 1u) << warningsText(topo);
  EXPECT_EQ(topo.warnings[0].path, "class/infiniband_verbs/uverbs7/ibdev");
}

TEST(SysfsDiscovery, LargeNodeHasEveryPortAndGid) {
  const auto topo = discoverFixture("large-16x2");
  EXPECT_TRUE(topo.warnings.empty()) << warningsText(topo);
  ASSERT_EQ(topo.devices.size(), 16u);
  for (const auto& d : topo.devices) {
    ASSERT_EQ(d.ports.size(), 2u);
    EXPECT_EQ(d.ports[1].gids.size(), 48u); // 2 link-local + 2 x (15 IPv4 + 8 IPv6)
    EXPECT_EQ(d.ports[1].netdev, d.netdevs[1]);
  }
}

TEST(SysfsDiscovery, AGarbageOrMissingAttributeSkipsOnlyThatEntry) {
  FixtureCopy copy("sparse-gids");
  const std::string port = "class/infiniband/mlx5_0/ports/1";
  std::ofstream(copy.sys(port + "/gids/5"), std::ios::trunc) << "not-a-gid\n";
  std::ofstream(copy.sys(port + "/gid_attrs/types/1"), std::ios::trunc) << "RoCE v9\n";
  fs::remove(copy.sys("class/infiniband/mlx5_1/ports/1/rate"));
  std::ofstream(copy.sys("class/infiniband/mlx5_1/device/numa_node"), std::ios::trunc) << "x\n";

  const auto topo = discoverFromSysfs(copy.roots());
  ASSERT_EQ(topo.devices.size(), 2u);
  std::vector<uint32_t> indexes;
  for (const auto& g : topo.devices[0].ports.at(0).gids) {
    indexes.push_back(g.index);
  }
  EXPECT_EQ(indexes, (std::vector<uint32_t>{0, 4}));
  const RdmaDevice& other = topo.devices[1];
  EXPECT_EQ(other.ports.at(0).rate_gbps, 0u);
  EXPECT_TRUE(other.ports.at(0).active());
  EXPECT_EQ(other.ports.at(0).gids.size(), 4u);
  EXPECT_EQ(other.numa_node, std::nullopt);

  std::vector<std::string> paths;
  for (const auto& w : topo.warnings) {
    paths.push_back(w.path);
  }
  std::sort(paths.begin(), paths.end());
  EXPECT_EQ(paths, (std::vector<std::string>{port + "/gid_attrs/types/1", port + "/gids/5",
                                             "class/infiniband/mlx5_1/device/numa_node",
                                             "class/infiniband/mlx5_1/ports/1/rate"}))
      << warningsText(topo);
}

TEST(SysfsDiscovery, WarningsFollowTheDeviceOrder) {
  FixtureCopy copy("a100-roce");
  for (const char* device : {"mlx5_2", "mlx5_5", "mlx5_8"}) {
    fs::remove(copy.sys(std::string("class/infiniband/") + device + "/ports/1/rate"));
    fs::remove(copy.sys(std::string("class/infiniband/") + device + "/fw_ver"));
  }
  const auto topo = discoverFromSysfs(copy.roots());
  ASSERT_EQ(topo.warnings.size(), 6u) << warningsText(topo);
  EXPECT_EQ(topo.warnings[0].path, "class/infiniband/mlx5_2/fw_ver");
  EXPECT_EQ(topo.warnings[5].path, "class/infiniband/mlx5_8/ports/1/rate");
}

TEST(SysfsDiscovery, MissingRootIsAWarningNotACrash) {
  const auto topo = discoverFromSysfs({"/nonexistent-kube-rdma-root", "/nonexistent-proc"});
  EXPECT_TRUE(topo.devices.empty());
  EXPECT_TRUE(topo.gpus.empty());
  ASSERT_GE(topo.warnings.size(), 2u);
  EXPECT_EQ(topo.warnings[0].path, "/nonexistent-kube-rdma-root");
  EXPECT_EQ(topo.warnings[0].message, "cannot open the sysfs root: No such file or directory");
}

TEST(SysfsDiscovery, PortStatesFollowTheTree) {
  FixtureCopy copy("sparse-gids");
  const auto known = discoverFromSysfs(copy.roots());
  const std::string sys = copy.roots().sysfs_root;
  auto samples = readPortStates(sys, known);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_TRUE(samples[0].present);
  EXPECT_EQ(samples[0].state, PortState::kActive);

  std::ofstream(copy.sys("class/infiniband/mlx5_0/ports/1/state"), std::ios::trunc) << "1: DOWN\n";
  fs::remove(copy.sys("class/infiniband/mlx5_1"));
  samples = readPortStates(sys, known);
  EXPECT_EQ(samples[0].device, "mlx5_0");
  EXPECT_TRUE(samples[0].present);
  EXPECT_EQ(samples[0].state, PortState::kDown);
  EXPECT_EQ(samples[1].device, "mlx5_1");
  EXPECT_FALSE(samples[1].present);

  std::ofstream(copy.sys("class/infiniband/mlx5_0/ports/1/state"), std::ios::trunc) << "junk\n";
  samples = readPortStates(sys, known);
  EXPECT_TRUE(samples[0].present);
  EXPECT_EQ(samples[0].state, PortState::kNop);

  // Reads with an error, like an attribute the kernel refuses: present, not usable.
  fs::remove(copy.sys("class/infiniband/mlx5_0/ports/1/state"));
  fs::create_directory(copy.sys("class/infiniband/mlx5_0/ports/1/state"));
  samples = readPortStates(sys, known);
  EXPECT_TRUE(samples[0].present);
  EXPECT_EQ(samples[0].state, PortState::kNop);
}

size_t openDescriptors() {
  return static_cast<size_t>(
      std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator()));
}

TEST(SysfsDiscovery, HeldPortStateFilesFollowTheTree) {
  FixtureCopy copy("sparse-gids");
  const auto known = discoverFromSysfs(copy.roots());
  const std::string sys = copy.roots().sysfs_root;
  const std::string state = copy.sys("class/infiniband/mlx5_0/ports/1/state");
  PortStateFiles files(sys);
  auto samples = files.read(known, listRdmaDeviceNames(sys));
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].state, PortState::kActive);
  EXPECT_TRUE(samples[1].present);
  const size_t held = openDescriptors();

  // Rewritten in place, as kernfs makes the text anew: the held file reads the new state.
  std::ofstream(state, std::ios::trunc) << "1: DOWN\n";
  samples = files.read(known, listRdmaDeviceNames(sys));
  EXPECT_EQ(samples[0].state, PortState::kDown);
  EXPECT_EQ(openDescriptors(), held);

  // Replaced by a rename: the unlinked file is dropped and the new one opened.
  std::ofstream(state + ".new") << "4: ACTIVE\n";
  fs::rename(state + ".new", state);
  samples = files.read(known, listRdmaDeviceNames(sys));
  EXPECT_EQ(samples[0].state, PortState::kActive);
  EXPECT_EQ(openDescriptors(), held);

  // Gone from class/infiniband: not present, whatever its held file still reads, and closed.
  fs::remove(copy.sys("class/infiniband/mlx5_1"));
  samples = files.read(known, listRdmaDeviceNames(sys));
  EXPECT_TRUE(samples[0].present);
  EXPECT_FALSE(samples[1].present);
  EXPECT_EQ(openDescriptors(), held - 1);
}

TEST(SysfsDiscovery, NaturalOrder) {
  EXPECT_TRUE(naturalLess("mlx5_2", "mlx5_10"));
  EXPECT_FALSE(naturalLess("mlx5_10", "mlx5_2"));
  EXPECT_TRUE(naturalLess("mlx5_1", "mlx5_10"));
  EXPECT_TRUE(naturalLess("eth9", "eth10"));
  EXPECT_TRUE(naturalLess("ib0", "mlx5_0"));
  EXPECT_FALSE(naturalLess("mlx5_1", "mlx5_1"));
  EXPECT_TRUE(naturalLess("a01", "a1")); // equal values: fall back to the text
}

} // namespace
} // namespace kube_rdma
