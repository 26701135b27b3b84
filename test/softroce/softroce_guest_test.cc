// Runs inside the VM that test/softroce/run.sh boots: Debian's Linux 6.1 with two soft-RoCE
// (rxe) devices, rxe0 on mgmt0 (the default route) and rxe1 on data0, libibverbs with its rxe
// provider, and rdma-core's ibv_devinfo. Discovery, libibverbs and the plugin meet a real kernel's
// RDMA stack here instead of fixtures. Elsewhere every test skips: /sys would be the host's.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <arpa/inet.h>

#include "common/log.h"
#include "common/sysfs_discovery.h"
#include "common/verbs_discovery.h"
#include "test/plugin/plugin_test_base.h"

namespace kube_rdma {
namespace {

using std::chrono::milliseconds;
// Generous: the VM is emulated (no KVM), and every binary runs under ASan.
constexpr milliseconds kDeadline{60000};
constexpr const char* kShared = "rdma/shared";
const DiscoveryRoots kRealRoots{"/sys", "/proc"};

class SoftRoceVm : public ::testing::Test {
protected:
  void SetUp() override {
    if (std::getenv("KUBE_RDMA_SOFTROCE_VM") == nullptr) {
      GTEST_SKIP() << "runs inside the soft-RoCE VM of test/softroce/run.sh only";
    }
  }
};

std::string run(const std::string& command) {
  std::string out;
  if (FILE* p = ::popen(command.c_str(), "r")) {
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) {
      out.append(buf, n);
    }
    ::pclose(p);
  }
  return out;
}

// "fe80:0000:...:0001" (sysfs) as inet_ntop prints it ("fe80::ff:fe00:1"), which ibv_devinfo uses.
std::string compressed(const std::string& kernel_gid) {
  std::string hex;
  for (char c : kernel_gid) {
    if (c != ':') {
      hex += c;
    }
  }
  unsigned char bytes[16] = {};
  for (size_t i = 0; i < 16 && 2 * i + 1 < hex.size(); ++i) {
    bytes[i] = static_cast<unsigned char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET6, bytes, text, sizeof(text));
  return text;
}

// One line per used GID: "<device> <port> <index> <gid as inet_ntop> <RoCE v1|RoCE v2>".
std::string gidLines(const NodeTopology& topo) {
  std::ostringstream out;
  for (const auto& d : topo.devices) {
    for (const auto& p : d.ports) {
      for (const auto& g : p.gids) {
        out << d.name << " " << p.number << " " << g.index << " " << compressed(g.gid) << " "
            << (g.type == GidType::kRoceV2 ? "RoCE v2" : "RoCE v1") << "\n";
      }
    }
  }
  return out.str();
}

// The same lines from `ibv_devinfo -v`: "hca_id:\trxe0", "port:\t1", "GID[  1]:\t\t::ffff:...,
// RoCE v2".
std::string ibvDevinfoGidLines() {
  std::istringstream in(run("ibv_devinfo -v"));
  std::ostringstream out;
  std::string line, device, port;
  while (std::getline(in, line)) {
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos) {
      continue;
    }
    line = line.substr(start);
    if (line.rfind("hca_id:", 0) == 0) {
      device = line.substr(line.find_first_not_of(" \t", 7));
    } else if (line.rfind("port:", 0) == 0) {
      port = line.substr(line.find_first_not_of(" \t", 5));
    } else if (line.rfind("GID[", 0) == 0) {
      const size_t close = line.find(']');
      const std::string index = line.substr(4, close - 4);
      const std::string rest = line.substr(line.find_first_not_of(" \t", close + 2)); // "]:"
      const size_t comma = rest.find(", ");
      out << device << " " << port << " " << std::stoi(index) << " " << rest.substr(0, comma) << " "
          << rest.substr(comma + 2) << "\n";
    }
  }
  return out.str();
}

void expectSamePorts(const RdmaDevice& a, const RdmaDevice& b) {
  ASSERT_EQ(a.ports.size(), b.ports.size()) << a.name;
  for (size_t i = 0; i < a.ports.size(); ++i) {
    const Port& p = a.ports[i];
    const Port& q = b.ports[i];
    EXPECT_EQ(p.number, q.number);
    EXPECT_EQ(p.state, q.state) << a.name;
    EXPECT_EQ(p.phys_state, q.phys_state) << a.name;
    EXPECT_EQ(p.link_layer, q.link_layer) << a.name;
    EXPECT_EQ(p.rate, q.rate) << a.name;
    EXPECT_EQ(p.rate_gbps, q.rate_gbps) << a.name;
    EXPECT_EQ(p.lid, q.lid) << a.name;
    EXPECT_EQ(p.gid_table_len, q.gid_table_len) << a.name;
    EXPECT_EQ(p.netdev, q.netdev) << a.name;
    ASSERT_EQ(p.gids.size(), q.gids.size()) << a.name;
    for (size_t g = 0; g < p.gids.size(); ++g) {
      EXPECT_EQ(p.gids[g].index, q.gids[g].index);
      EXPECT_EQ(p.gids[g].gid, q.gids[g].gid);
      EXPECT_EQ(p.gids[g].type, q.gids[g].type);
      EXPECT_EQ(p.gids[g].netdev, q.gids[g].netdev);
      EXPECT_EQ(p.gids[g].ipv4, q.gids[g].ipv4);
    }
  }
}

TEST_F(SoftRoceVm, SysfsDiscoveryReadsTheKernelsRxeDevicesWithoutAWarning) {
  const NodeTopology topo = discoverFromSysfs(kRealRoots);
  for (const auto& w : topo.warnings) {
    ADD_FAILURE() << w.path << ": " << w.message;
  }
  ASSERT_EQ(topo.devices.size(), 2u);
  EXPECT_EQ(topo.management_netdev, "mgmt0");
  const RdmaDevice& data = topo.devices[1];
  EXPECT_EQ(data.name, "rxe1");
  EXPECT_EQ(data.netdevs, (std::vector<std::string>{"data0"}));
  EXPECT_TRUE(std::filesystem::exists(data.uverbsDevicePath())) << data.uverbsDevicePath();
  ASSERT_EQ(data.ports.size(), 1u);
  const Port& port = data.ports[0];
  EXPECT_TRUE(port.active());
  EXPECT_EQ(port.link_layer, LinkLayer::kEthernet);
  EXPECT_EQ(port.netdev, "data0");
  EXPECT_GE(port.gid_table_len, 256u);
  bool ipv4_v2 = false;
  for (const auto& g : port.gids) {
    ipv4_v2 = ipv4_v2 || (g.type == GidType::kRoceV2 && g.ipv4 == "198.51.100.20");
  }
  EXPECT_TRUE(ipv4_v2) << gidLines(topo);
}

TEST_F(SoftRoceVm, LibibverbsAndSysfsGiveTheSameModel) {
  Logger logger(std::cerr);
  const NodeTopology verbs = discoverNode(kRealRoots, logger, GidScan{});
  const NodeTopology sysfs = discoverFromSysfs(kRealRoots);
  EXPECT_EQ(verbs.source, "libibverbs");
  ASSERT_EQ(verbs.devices.size(), sysfs.devices.size());
  for (size_t i = 0; i < verbs.devices.size(); ++i) {
    const RdmaDevice& v = verbs.devices[i];
    const RdmaDevice& s = sysfs.devices[i];
    EXPECT_EQ(v.name, s.name);
    EXPECT_EQ(v.node_guid, s.node_guid);
    EXPECT_EQ(v.sys_image_guid, s.sys_image_guid);
    EXPECT_EQ(v.fw_ver, s.fw_ver);
    EXPECT_EQ(v.uverbs, s.uverbs);
    EXPECT_EQ(v.netdevs, s.netdevs);
    expectSamePorts(v, s);
  }
}

TEST_F(SoftRoceVm, IbvDevinfoListsTheGidsDiscoveryFound) {
  const NodeTopology topo = discoverFromSysfs(kRealRoots);
  const std::string theirs = ibvDevinfoGidLines();
  ASSERT_FALSE(theirs.empty()) << "ibv_devinfo -v printed no GID";
  EXPECT_EQ(gidLines(topo), theirs);
}

TEST_F(SoftRoceVm, RdmactlDoctorPassesAndNamesTheDataRxeForNccl) {
  const std::string rdmactl = RDMACTL_BINARY;
  EXPECT_EQ(std::system((rdmactl + " doctor").c_str()), 0);
  const std::string env = run(rdmactl + " nccl-env");
  EXPECT_NE(env.find("NCCL_IB_HCA==rxe1:1\n"), std::string::npos) << env;
}

// The real plugin on the VM's /sys and /dev, with the kubelet simulator.
class SoftRocePlugin : public PluginTestBase {
protected:
  SoftRocePlugin() : PluginTestBase(kDeadline) {}
  void SetUp() override {
    if (std::getenv("KUBE_RDMA_SOFTROCE_VM") == nullptr) {
      GTEST_SKIP() << "runs inside the soft-RoCE VM of test/softroce/run.sh only";
    }
    kubelet_dir_ = tmp_.sub("kubelet");
    state_dir_ = tmp_.path() + "/state";
    kubelet_ = std::make_unique<KubeletSimulator>(kubelet_dir_);
    ASSERT_TRUE(kubelet_->start().ok());
    launchPlugin({"--sysfs-root", "/sys", "--proc-root", "/proc", "--dev-root", "/dev",
                  "--device-plugin-dir", kubelet_dir_, "--plugin-registry-dir",
                  tmp_.path() + "/no-registry", "--state-dir", state_dir_, "--health-interval",
                  "200ms"},
                 "plugin.log");
  }
};

// One soft-RoCE device for data (rxe0 carries the default route): the default 16 IDs per HCA.
constexpr int kOffered = 16;

TEST_F(SoftRocePlugin, AllocateGrantsTheDataRxeAndLeavesTheManagementOneOut) {
  ASSERT_TRUE(waitForHealthy(kShared, kOffered, kOffered));
  auto answer = kubelet_->allocate(kShared, {"0"});
  ASSERT_TRUE(answer.ok()) << answer.error().message;

  const NodeTopology topo = discoverFromSysfs(kRealRoots);
  std::vector<std::string> nodes;
  for (const auto& spec : answer->devices()) {
    nodes.push_back(spec.host_path());
    EXPECT_TRUE(std::filesystem::exists(spec.host_path())) << spec.host_path();
  }
  EXPECT_EQ(nodes, (std::vector<std::string>{topo.findDevice("rxe1")->uverbsDevicePath(),
                                             "/dev/infiniband/rdma_cm"}));
  EXPECT_EQ(answer->envs().at("NCCL_IB_HCA"), "=rxe1:1");
  ASSERT_EQ(answer->mounts_size(), 1);
  EXPECT_TRUE(std::filesystem::exists(answer->mounts(0).host_path()));
}

TEST_F(SoftRocePlugin, ThePortGoingDownInTheKernelMakesThePoolUnhealthyAndBack) {
  ASSERT_TRUE(waitForHealthy(kShared, kOffered, kOffered));
  // rxe follows its netdev: NETDEV_DOWN sets the port DOWN in the kernel.
  ASSERT_EQ(std::system("ip link set data0 down"), 0);
  EXPECT_TRUE(waitForHealthy(kShared, 0, kOffered))
      << run("cat /sys/class/infiniband/rxe1/ports/1/state");
  ASSERT_EQ(std::system("ip link set data0 up"), 0);
  EXPECT_TRUE(waitForHealthy(kShared, kOffered, kOffered))
      << run("cat /sys/class/infiniband/rxe1/ports/1/state");
}

} // namespace
} // namespace kube_rdma
