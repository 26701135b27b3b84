// Runs inside the VM that test/softroce/run.sh boots: Debian's Linux 6.1 (and, for the
// SoftRoceExclusive tests alone, a Linux 7.x in exclusive RDMA netns mode) with two soft-RoCE
// (rxe) devices, rxe0 on mgmt0 (the default route) and rxe1 on data0, libibverbs with its rxe
// provider, and rdma-core's ibv_devinfo. Discovery, libibverbs and the plugin meet a real kernel's
// RDMA stack here instead of fixtures. Elsewhere every test skips: /sys would be the host's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/util/log.h"
#include "common/node/sysfs_discovery.h"
#include "common/node/verbs_discovery.h"
#include "plugin/topology_json.h"
#include "test/plugin/plugin_test_base.h"

namespace kube_rdma {
namespace {

using std::chrono::milliseconds;
// Generous: the VM is emulated (no KVM), every binary runs under ASan, and the host may be busy
// (a plugin start took over 60 s in a VM on a host with load 14).
constexpr milliseconds kDeadline{180000};
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
  auto discovered = discoverNode(kRealRoots, DiscoveryBackend::kVerbs, logger, GidScan{});
  ASSERT_TRUE(discovered.ok()) << discovered.error().message;
  const NodeTopology& verbs = *discovered;
  const NodeTopology sysfs = discoverFromSysfs(kRealRoots);
  EXPECT_EQ(verbs.source, "libibverbs");
  ASSERT_EQ(verbs.devices.size(), sysfs.devices.size());
  for (size_t i = 0; i < verbs.devices.size(); ++i) {
    const RdmaDevice& v = verbs.devices[i];
    const RdmaDevice& s = sysfs.devices[i];
    EXPECT_EQ(v.name, s.name);
    EXPECT_EQ(v.node_guid, s.node_guid);
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

// The kernel's RDMA netns mode switched for real. rdmactl doctor reads it on the host (shared: ok,
// exclusive: warn) and in a namespace of exclusive mode, where the kernel shows no device that was
// not moved there (fail). And Linux 6.1 refuses to move soft-RoCE into a namespace (rxe has no
// disassociate_ucontext): a device per pod is shown by SoftRoceExclusive, on a later kernel.
TEST_F(SoftRoceVm, ExclusiveRdmaNetnsModeIsReportedAndRxeCannotMoveIntoAPod) {
  const std::string rdmactl = RDMACTL_BINARY;
  // `prefix` runs rdmactl in a namespace, as in a pod (KUBERNETES_SERVICE_HOST set).
  const auto netns_mode = [&](const std::string& prefix) {
    const std::string out =
        run(prefix + (prefix.empty() ? "" : "env KUBERNETES_SERVICE_HOST=10.96.0.1 ") + rdmactl +
            " --json doctor 2>/dev/null");
    const auto report = nlohmann::json::parse(out, nullptr, false);
    for (const auto& check : report.value("checks", nlohmann::json::array())) {
      if (check.value("name", "") == "rdma-netns-mode") {
        return check.value("verdict", "") + " " + check.value("detail", "");
      }
    }
    return "no rdma-netns-mode check in: " + out;
  };
  EXPECT_EQ(netns_mode("").rfind("ok shared", 0), 0u) << netns_mode("");
  ASSERT_EQ(std::system("rdma system set netns exclusive"), 0) << run("rdma system show 2>&1");
  struct Shared {
    ~Shared() {
      (void)std::system("ip netns del excl-pod 2>/dev/null; rdma system set netns shared");
    }
  } restore;
  EXPECT_EQ(netns_mode("").rfind("warn exclusive", 0), 0u) << netns_mode("");
  ASSERT_EQ(std::system("ip netns add excl-pod"), 0);
  EXPECT_EQ(netns_mode("ip netns exec excl-pod ").rfind("fail exclusive, and no RDMA device", 0),
            0u)
      << netns_mode("ip netns exec excl-pod ");
  const std::string moved = run("rdma dev set rxe1 netns excl-pod 2>&1; echo rc=$?");
  EXPECT_EQ(moved.find("rc=0"), std::string::npos) << moved;
  EXPECT_NE(moved.find("Operation not supported"), std::string::npos) << moved;
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

// ---- the plugin as components/verbs-discovery runs it -----------------------------------------

// A shell word.
std::string shellWord(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

bool atOrBelow(const std::string& path, const std::string& dir) {
  return path == dir || path.rfind(dir + "/", 0) == 0;
}

// What one Allocate answer and the plugin's topology.json say, to compare two discoveries.
struct PluginResult {
  std::map<std::string, std::string> envs;
  std::vector<std::string> device_nodes; // host paths
  nlohmann::json topology;
  std::string log;
};

// The plugin container of manifests/components/verbs-discovery (verbs-discovery-plugin.json,
// which the manifests test holds equal to the rendered overlay) in a private mount namespace laid
// out as the container sees its volumes: each mount bound at prefix + mountPath, read-only where
// the manifest says so, except under /dev, which libibverbs reads at its compiled-in path; /sys
// itself hidden behind an empty tmpfs, so that only SYSFS_PATH leads libibverbs to sysfs. The
// kubelet is the simulator (its socket directory is the device-plugins volume); it has no
// plugin-watcher directory, so the plugins_registry volume is left out and the plugin registers
// on kubelet.sock; its PodResources directory is empty (no per-pod metric here).
class SoftRoceVerbsOverlay : public PluginTestBase {
protected:
  SoftRoceVerbsOverlay() : PluginTestBase(kDeadline) {}
  void SetUp() override {
    if (std::getenv("KUBE_RDMA_SOFTROCE_VM") == nullptr) {
      GTEST_SKIP() << "runs inside the soft-RoCE VM of test/softroce/run.sh only";
    }
    std::ifstream in(std::string(KUBE_RDMA_SOURCE_DIR) +
                     "/test/softroce/verbs-discovery-plugin.json");
    pod_ = nlohmann::json::parse(in);
  }

  // The shell script that lays out the namespace and execs the plugin with the container's
  // arguments and environment, `extra_args` appended (a repeated flag takes its last value).
  std::string containerScript(const std::string& name, const std::string& kubelet_dir,
                              const std::vector<std::string>& extra_args) {
    const std::string prefix = tmp_.sub(name + "-pod");
    const std::string config_dir = tmp_.sub(name + "-config");
    std::filesystem::copy_file(std::string(KUBE_RDMA_SOURCE_DIR) +
                                   "/manifests/base/device-plugin/config.json",
                               config_dir + "/config.json");
    const std::map<std::string, std::string> host = {
        {"/sys", "/sys"},
        {"/dev/infiniband", "/dev/infiniband"},
        {"/var/lib/kubelet/device-plugins", kubelet_dir},
        {"/var/run/kube-rdma", tmp_.sub(name + "-state")},
        {"/var/lib/kube-rdma", tmp_.sub(name + "-lib")},
        {"/var/lib/kubelet/pod-resources", tmp_.sub(name + "-pod-resources")}};
    std::vector<std::string> mounted;
    std::string script = "set -e\n";
    for (const auto& m : pod_.at("mounts")) {
      const std::string path = m.at("mountPath");
      std::string source;
      if (m.contains("configMap")) {
        source = config_dir;
      } else if (m.at("hostPath") == "/var/lib/kubelet/plugins_registry") {
        continue;
      } else if (auto it = host.find(m.at("hostPath")); it != host.end()) {
        source = it->second;
      } else {
        ADD_FAILURE() << "the overlay mounts " << m.dump() << ", which this test does not lay out";
        continue;
      }
      const std::string target = atOrBelow(path, "/dev") ? path : prefix + path;
      if (target != path) {
        mounted.push_back(path);
      }
      script += "mkdir -p " + shellWord(target) + "\nmount --bind " + shellWord(source) + " " +
                shellWord(target) + "\n";
      if (m.at("readOnly")) {
        script += "mount -o remount,bind,ro " + shellWord(target) + "\n";
      }
    }
    script += "mount -t tmpfs -o ro,size=4k nosys /sys\n";
    // Paths at, below or above (--dev-root=/host/dev) a mount are under the prefix.
    auto inPod = [&](const std::string& path) {
      for (const auto& m : mounted) {
        if (atOrBelow(path, m) || atOrBelow(m, path)) {
          return prefix + path;
        }
      }
      return path;
    };
    std::map<std::string, std::string> env;
    const std::map<std::string, std::string> fields = {{"spec.nodeName", "softroce-vm"},
                                                       {"status.podIP", "127.0.0.1"}};
    for (const auto& e : pod_.at("env")) {
      const std::string value =
          e.contains("value") ? inPod(e.at("value")) : fields.at(e.at("fieldRef"));
      env[e.at("name")] = value;
      script += "export " + std::string(e.at("name")) + "=" + shellWord(value) + "\n";
    }
    script += "exec " + shellWord(KUBE_RDMA_PLUGIN_BINARY);
    std::vector<std::string> args = pod_.at("args");
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    for (std::string arg : args) {
      for (const auto& [var, value] : env) {
        for (size_t at; (at = arg.find("$(" + var + ")")) != std::string::npos;) {
          arg.replace(at, var.size() + 3, value);
        }
      }
      const size_t eq = arg.find('=');
      if (eq != std::string::npos && arg.compare(eq + 1, 1, "/") == 0) {
        arg = arg.substr(0, eq + 1) + inPod(arg.substr(eq + 1));
      }
      script += " " + shellWord(arg);
    }
    return script + "\n";
  }

  // A fresh kubelet simulator for one plugin run.
  void startKubelet(const std::string& name) {
    kubelet_dir_ = tmp_.sub(name + "-kubelet");
    kubelet_ = std::make_unique<KubeletSimulator>(kubelet_dir_);
    EXPECT_TRUE(kubelet_->start().ok());
  }

  // The plugin as the script execs it, in a mount namespace of its own.
  void launchInPod(const std::string& script, const std::string& log_name) {
    launchPlugin({"--mount", "--propagation", "private", "/bin/sh", "-c", script}, log_name,
                 "/usr/bin/unshare");
  }

  // Waits, generously, for the plugin to give up at start; its exit code and log.
  std::pair<Result<int>, std::string> exitAtStart() {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (plugin_->logs().find("cannot start") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(100));
    }
    auto exit = plugin_->terminate(kDeadline);
    return {std::move(exit), plugin_->logs()};
  }

  // Starts the container on a fresh kubelet simulator, allocates one rdma/shared ID, and stops it.
  PluginResult allocateAs(const std::string& name, const std::vector<std::string>& extra_args) {
    PluginResult result;
    startKubelet(name);
    const std::string script = containerScript(name, kubelet_dir_, extra_args);
    launchInPod(script, name + ".log");
    if (!plugin_) {
      return result;
    }
    EXPECT_TRUE(waitForHealthy(kShared, kOffered, kOffered)) << script << plugin_->logs();
    auto answer = kubelet_->allocate(kShared, {"0"});
    EXPECT_TRUE(answer.ok()) << (answer.ok() ? "" : answer.error().message);
    if (answer.ok()) {
      result.envs = {answer->envs().begin(), answer->envs().end()};
      for (const auto& spec : answer->devices()) {
        result.device_nodes.push_back(spec.host_path());
      }
    }
    // Written after registering, nothing waits for it: wait for it, generously.
    const std::string topology = tmp_.path() + "/" + name + "-state/topology.json";
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (!std::filesystem::exists(topology) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(100));
    }
    std::ifstream in(topology);
    result.topology = nlohmann::json::parse(in, nullptr, false);
    auto exit = plugin_->terminate(kDeadline);
    EXPECT_TRUE(exit.ok() && *exit == 0) << plugin_->logs();
    result.log = plugin_->logs();
    plugin_.reset();
    kubelet_.reset();
    return result;
  }

  nlohmann::json pod_;
};

TEST_F(SoftRoceVerbsOverlay, ServedByLibibverbsWithTheSameResultAsSysfs) {
  const PluginResult verbs = allocateAs("verbs", {});
  EXPECT_NE(
      verbs.log.find(R"("msg":"discovery backend","backend":"libibverbs","discovery":"verbs")"),
      std::string::npos)
      << verbs.log;
  const PluginResult sysfs = allocateAs("sysfs", {"--discovery=sysfs"});
  EXPECT_NE(sysfs.log.find(R"("msg":"discovery backend","backend":"sysfs","discovery":"sysfs")"),
            std::string::npos)
      << sysfs.log;

  EXPECT_EQ(verbs.envs, sysfs.envs);
  EXPECT_EQ(verbs.envs.at("NCCL_IB_HCA"), "=rxe1:1");
  EXPECT_EQ(verbs.envs.count("NCCL_IB_GID_INDEX"), 1u);
  EXPECT_EQ(verbs.device_nodes, sysfs.device_nodes);
  EXPECT_EQ(verbs.topology.value("source", ""), "libibverbs");
  EXPECT_EQ(sysfs.topology.value("source", ""), "sysfs");
  nlohmann::json a = verbs.topology, b = sysfs.topology;
  a.erase("source");
  b.erase("source");
  EXPECT_EQ(a.dump(1), b.dump(1));
}

// --discovery=verbs with no device node libibverbs can use: the plugin exits at start, naming why,
// instead of serving from sysfs.
TEST_F(SoftRoceVerbsOverlay, WithoutTheDeviceNodesTheVerbsBackendRefusesToStart) {
  startKubelet("empty");
  const std::string script =
      "mount -t tmpfs empty /dev/infiniband\n" + containerScript("empty", kubelet_dir_, {});
  launchInPod(script, "empty.log");
  ASSERT_TRUE(plugin_);
  const auto [exit, log] = exitAtStart();
  EXPECT_NE(log.find("--discovery=verbs: libibverbs lists no RDMA device; it lists only the "
                     "devices whose node is in /dev/infiniband"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("rxe1 (/dev/infiniband/uverbs"), std::string::npos) << log;
  EXPECT_TRUE(exit.ok() && *exit == 1) << log;
}

// An unprivileged container: its device cgroup refuses the uverbs nodes (here a cgroup v1
// devices controller denying major 231, as runc's rules do for a node not granted). libibverbs
// lists the devices (stat() is not refused) but cannot open them: the plugin exits naming EPERM.
TEST_F(SoftRoceVerbsOverlay, InADeviceCgroupThatRefusesUverbsTheVerbsBackendNamesEperm) {
  const std::string cgroup = tmp_.sub("devices-cgroup");
  const std::string mount_cgroup = "mount -t cgroup -o devices devices " + cgroup;
  if (std::system(("unshare --mount " + mount_cgroup).c_str()) != 0) {
    GTEST_SKIP() << "this kernel has no cgroup v1 devices controller to mount";
  }
  startKubelet("eperm");
  // In the plugin's mount namespace, so the mount goes with it.
  const std::string script = mount_cgroup + " && mkdir -p " + cgroup +
                             "/plugin && echo 'c 231:* rwm' > " + cgroup +
                             "/plugin/devices.deny && echo $$ > " + cgroup +
                             "/plugin/cgroup.procs\n" + containerScript("eperm", kubelet_dir_, {});
  launchInPod(script, "eperm.log");
  ASSERT_TRUE(plugin_);
  const auto [exit, log] = exitAtStart();
  EXPECT_NE(log.find("--discovery=verbs: libibverbs cannot open rxe0: open /dev/infiniband/uverbs"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("Operation not permitted (the device cgroup refuses it"), std::string::npos)
      << log;
  EXPECT_TRUE(exit.ok() && *exit == 1) << log;
}

// ---- RDMA traffic with only what Allocate handed out -------------------------------------------

// ib_write_bw server and client on the granted device and GID index, in a private mount namespace
// whose /dev/infiniband holds copies (mknod) of the granted nodes only. Prints ibv_devices, then
// the client's output; exits with the client's status.
std::string grantedTraffic(const std::vector<std::string>& nodes, const std::string& device,
                           const std::string& gid_index) {
  std::string script = "mount -t tmpfs granted /dev/infiniband\n";
  for (const auto& node : nodes) {
    struct stat st {};
    if (::stat(node.c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) {
      ADD_FAILURE() << node << " is not a character device";
      continue;
    }
    script += "mknod -m 666 " + shellWord(node) + " c " + std::to_string(major(st.st_rdev)) + " " +
              std::to_string(minor(st.st_rdev)) + "\n";
  }
  const std::string bw = "timeout 120 ib_write_bw -F -n 200 -p 18515 -d " + shellWord(device) +
                         " -x " + shellWord(gid_index);
  script += "ibv_devices\n" + bw + " >$TMPDIR/server.out 2>&1 &\n";
  // The client connects over TCP once the server listens: wait for its port, generously.
  script += "i=0; until ss -ltn | grep -q ':18515 '; do i=$((i+1)); [ $i -gt 300 ] && break; "
            "sleep 0.2; done\n";
  script += bw + " 127.0.0.1 2>&1; rc=$?\nwait\necho '-- server:'; cat $TMPDIR/server.out\n";
  script += "exit $rc\n";
  return "unshare --mount --propagation private /bin/sh -c " + shellWord(script) + " 2>&1";
}

// The average of ib_write_bw's result line ("65536 200 peak average msgrate"), or -1.
double averageBandwidth(const std::string& output) {
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    double bytes = 0, iterations = 0, peak = 0, average = -1;
    if (fields >> bytes >> iterations >> peak >> average && bytes == 65536) {
      return average;
    }
  }
  return -1;
}

TEST_F(SoftRoceVerbsOverlay, IbWriteBwMovesDataWithOnlyWhatAllocateGranted) {
  const PluginResult granted = allocateAs("traffic", {});
  ASSERT_EQ(granted.envs.count("NCCL_IB_GID_INDEX"), 1u);
  std::string device = granted.envs.at("NCCL_IB_HCA"); // "=rxe1:1"
  device = device.substr(1, device.find(':') - 1);
  const std::string index = granted.envs.at("NCCL_IB_GID_INDEX");

  const std::string out =
      run(grantedTraffic(granted.device_nodes, device, index) + "; echo exit=$?");
  EXPECT_NE(out.find("exit=0"), std::string::npos) << out;
  // perftest turns cycles into time with a CPU frequency it first samples; when the sample fits
  // badly (a busy VM) it prints this and every figure reads 0. The 200 writes completed all the
  // same (exit 0, the result line), which is what shows the data moved.
  if (out.find("Correlation coefficient r^2") == std::string::npos) {
    EXPECT_GT(averageBandwidth(out), 0.0) << out;
  } else {
    EXPECT_GE(averageBandwidth(out), 0.0) << out;
  }
  std::cout << "ib_write_bw -d " << device << " -x " << index << ": " << averageBandwidth(out)
            << " MB/s average\n";
  // libibverbs in there lists the granted device only.
  EXPECT_NE(out.find(device), std::string::npos) << out;
  EXPECT_EQ(out.find("rxe0"), std::string::npos) << out;

  // An index inside the table whose entry the kernel has not filled.
  const NodeTopology topo = discoverFromSysfs(kRealRoots);
  const Port& port = topo.findDevice(device)->ports.at(0);
  uint32_t unused = port.gids.back().index + 1;
  ASSERT_LT(unused, port.gid_table_len);
  const std::string bad =
      run(grantedTraffic(granted.device_nodes, device, std::to_string(unused)) + "; echo exit=$?");
  EXPECT_EQ(bad.find("exit=0"), std::string::npos) << bad;
  EXPECT_LT(averageBandwidth(bad), 0.0) << bad;
}

// RoCE through pods' own networks on the real kernel (docs/pod-networks.md): macvlan, ipvlan (L2)
// and VLAN children of data0, each moved into a network namespace of its own and renamed net1 as
// Multus does, with an address of the pod's. The kernel adds each pod's addresses to rxe1's GID
// table (shared RDMA netns mode), and every namespace reads every entry. A pod ends by deleting
// its namespace.
class VmPod {
public:
  // kind: "macvlan", "ipvlan" or "vlan" (VLAN 100 of data0).
  VmPod(std::string name, const std::string& kind, const std::string& ipv4,
        const std::string& ipv6 = "")
      : name_(std::move(name)) {
    const std::string link = kind == "vlan"     ? "type vlan id 100"
                             : kind == "ipvlan" ? "type ipvlan mode l2"
                                                : "type macvlan mode bridge";
    std::string script = "set -e; ip netns add " + name_ + "; ip link add link data0 name " +
                         name_ + "0 " + link + "; ip link set " + name_ + "0 netns " + name_ +
                         "; ip -n " + name_ + " link set " + name_ + "0 name net1; ip -n " + name_ +
                         " link set lo up; ip -n " + name_ + " link set net1 up; ip -n " + name_ +
                         " addr add " + ipv4 + "/24 dev net1";
    if (!ipv6.empty()) {
      script += "; ip -n " + name_ + " -6 addr add " + ipv6 + "/64 dev net1 nodad";
    }
    ipv4_ = ipv4;
    const std::string out = run("(" + script + ") 2>&1; echo rc=$?");
    ok_ = out.find("rc=0") != std::string::npos;
    EXPECT_TRUE(ok_) << out;
  }
  ~VmPod() { end(); }
  VmPod(const VmPod&) = delete;
  VmPod& operator=(const VmPod&) = delete;

  // Deletes the namespace and waits until the kernel has freed the child (its GIDs gone): the
  // kernel cleans a namespace up asynchronously, and data0 takes no macvlan while an ipvlan
  // child is left on it (nor the other way round).
  void end() {
    if (name_.empty()) {
      return;
    }
    run("ip netns del " + name_ + " 2>&1");
    name_.clear();
    const std::string gone =
        "grep -l " + ipv4Gid() + " /sys/class/infiniband/rxe1/ports/1/gids/* 2>/dev/null";
    for (int i = 0; i < 200 && !run(gone).empty(); ++i) {
      std::this_thread::sleep_for(milliseconds(100));
    }
  }
  bool ok() const { return ok_; }
  // `command` run in the pod's network namespace.
  std::string in(const std::string& command) const {
    return run("ip netns exec " + name_ + " " + command + " 2>&1");
  }

private:
  // The IPv4 address as the kernel writes its GID ("0000:...:ffff:c633:641f").
  std::string ipv4Gid() const {
    in_addr address{};
    ::inet_pton(AF_INET, ipv4_.c_str(), &address);
    const auto* b = reinterpret_cast<const unsigned char*>(&address);
    char text[64];
    std::snprintf(text, sizeof text, "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", b[0], b[1],
                  b[2], b[3]);
    return text;
  }

  std::string name_;
  std::string ipv4_;
  bool ok_ = false;
};

// The line of `text` that contains `part`, without its newline; "" when none does.
std::string lineOf(const std::string& text, const std::string& part) {
  const size_t at = text.find(part);
  if (at == std::string::npos) {
    return "";
  }
  const size_t start = text.rfind('\n', at) + 1; // npos + 1 == 0 on the first line
  return text.substr(start, text.find('\n', at) - start);
}

// kube-rdma-nccl-hook gives up after 2 s by default, leaving the node's nccl.conf, so that no
// container start waits on it. Here it runs emulated, under the sanitizers, beside the other
// tests: a run takes seconds, so the tests give it a minute.
constexpr const char* kHookDeadline = "--deadline-seconds=60";

class SoftRocePodNetworks : public SoftRoceVm {
protected:
  void SetUp() override {
    SoftRoceVm::SetUp();
    if (IsSkipped()) {
      return;
    }
    tmp_ = std::getenv("TMPDIR") != nullptr ? std::getenv("TMPDIR") : "/tmp";
    // Containers granted rxe1 (as the default pool grants it on the host).
    config_ = tmp_ + "/pod-networks.json";
    std::ofstream(config_) << R"({"pools": [{"resourceName": "rdma/shared",)"
                           << R"( "selector": {"deviceNames": ["rxe1"]}}]})";
    config6_ = tmp_ + "/pod-networks-ipv6.json";
    std::ofstream(config6_) << R"({"pools": [{"resourceName": "rdma/shared",)"
                            << R"( "selector": {"deviceNames": ["rxe1"]},)"
                            << R"( "nccl": {"addrFamily": "AF_INET6"}}]})";
  }

  // The rxe1 RoCE v2 entry holding `address` (dotted quad, or the kernel's IPv6 form), read by
  // the host; nullopt when there is none.
  static std::optional<uint32_t> v2IndexOf(const std::string& address) {
    const NodeTopology topo = discoverFromSysfs(kRealRoots);
    const RdmaDevice* rxe1 = topo.findDevice("rxe1");
    if (rxe1 == nullptr) {
      return std::nullopt;
    }
    for (const auto& g : rxe1->ports.at(0).gids) {
      if (g.type == GidType::kRoceV2 && (g.ipv4 == address || g.gid == address)) {
        return g.index;
      }
    }
    return std::nullopt;
  }

  // Waits until the kernel has added (or removed) `address`'s GIDs.
  static std::optional<uint32_t> waitForGid(const std::string& address, bool present = true) {
    for (int i = 0; i < 200; ++i) {
      const auto index = v2IndexOf(address);
      if (index.has_value() == present) {
        return index;
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
    ADD_FAILURE() << address << (present ? " never" : " still") << " in rxe1's GID table";
    return std::nullopt;
  }

  std::string ncclEnv(const VmPod* pod, const std::string& config) const {
    const std::string command = std::string(RDMACTL_BINARY) + " nccl-env --config " + config;
    return pod == nullptr ? run(command + " 2>&1") : pod->in(command);
  }

  static std::string indexLine(std::optional<uint32_t> index) {
    return index ? "NCCL_IB_GID_INDEX=" + std::to_string(*index) + "\n" : "(none)";
  }

  std::string tmp_;
  std::string config_;
  std::string config6_;
};

TEST_F(SoftRocePodNetworks, EachNamespaceGetsItsOwnGidIndexWhateverItsChildKind) {
  VmPod a("poda", "macvlan", "198.51.100.31");
  VmPod b("podb", "macvlan", "198.51.100.32");
  VmPod v("podv", "vlan", "203.0.113.41");
  ASSERT_TRUE(a.ok() && b.ok() && v.ok());
  const auto host = waitForGid("198.51.100.20");
  const auto ia = waitForGid("198.51.100.31");
  const auto ib = waitForGid("198.51.100.32");
  const auto iv = waitForGid("203.0.113.41");
  ASSERT_TRUE(host && ia && ib && iv);
  std::cout << "rxe1 RoCE v2 GIDs: host " << *host << ", macvlan pods " << *ia << " and " << *ib
            << ", VLAN " << *iv << "\n";
  // The host's view: the pods' entries are another namespace's (their netdev, in a namespace the
  // host's sysfs does not show, has no name here), its own entry is its own.
  const std::string table = run(std::string(RDMACTL_BINARY) + " gids rxe1");
  for (const char* pod_ip : {"198.51.100.31", "198.51.100.32", "203.0.113.41"}) {
    EXPECT_TRUE(lineOf(table, std::string("\t") + pod_ip + "\t").ends_with("\tother")) << table;
  }
  EXPECT_TRUE(lineOf(table, "\t198.51.100.20\t").ends_with("\tdata0\tthis")) << table;

  EXPECT_NE(ncclEnv(nullptr, config_).find(indexLine(host)), std::string::npos)
      << ncclEnv(nullptr, config_);
  for (const auto& [pod, index] : {std::pair{&a, ia}, std::pair{&b, ib}, std::pair{&v, iv}}) {
    const std::string env = ncclEnv(pod, config_);
    EXPECT_NE(env.find(indexLine(index)), std::string::npos) << env;
  }
  // rdmactl gids in a pod says which entries are its own.
  const std::string gids = a.in(std::string(RDMACTL_BINARY) + " --json gids rxe1");
  const auto rows = nlohmann::json::parse(gids, nullptr, false);
  ASSERT_TRUE(rows.is_array()) << gids;
  // In the pod's own sysfs view its macvlan is net1 and the others' have no name: its entries,
  // the IPv4 address and the macvlan's link-local one, are exactly those marked "this".
  int own = 0;
  for (const auto& row : rows) {
    EXPECT_EQ(row["netns"], row["netdev"] == "net1" ? "this" : "other") << row.dump();
    own += row["netns"] == "this" ? 1 : 0;
    if (row["ipv4"] == "198.51.100.31") {
      EXPECT_EQ(row["netns"], "this") << row.dump();
    }
  }
  EXPECT_EQ(own, 2); // rxe has RoCE v2 entries only
}

TEST_F(SoftRocePodNetworks, APfWithoutAnAddressGivesTheHostNoIndexAndEachPodItsOwn) {
  ASSERT_EQ(std::system("ip addr del 198.51.100.20/24 dev data0"), 0);
  VmPod a("podd", "macvlan", "198.51.100.34");
  VmPod b("pode", "macvlan", "198.51.100.35");
  const auto ia = waitForGid("198.51.100.34");
  const auto ib = waitForGid("198.51.100.35");
  waitForGid("198.51.100.20", false);
  // The old rule handed every pod the first pod's GID; the host has none of its own now.
  const std::string host = ncclEnv(nullptr, config_);
  EXPECT_EQ(host.find("NCCL_IB_GID_INDEX="), std::string::npos) << host;
  EXPECT_NE(ncclEnv(&a, config_).find(indexLine(ia)), std::string::npos) << ncclEnv(&a, config_);
  EXPECT_NE(ncclEnv(&b, config_).find(indexLine(ib)), std::string::npos) << ncclEnv(&b, config_);
  a.end();
  b.end();
  ASSERT_EQ(std::system("ip addr add 198.51.100.20/24 dev data0"), 0);
  waitForGid("198.51.100.20");
}

TEST_F(SoftRocePodNetworks, AnEndedPodsSlotsGoToTheNextPodNeverToAnother) {
  VmPod a("podf", "macvlan", "198.51.100.36");
  VmPod b("podg", "macvlan", "198.51.100.37");
  const auto ia = waitForGid("198.51.100.36");
  const auto ib = waitForGid("198.51.100.37");
  ASSERT_TRUE(ia && ib);
  a.end();
  waitForGid("198.51.100.36", false);
  EXPECT_NE(ncclEnv(&b, config_).find(indexLine(ib)), std::string::npos) << ncclEnv(&b, config_);
  VmPod c("podh", "macvlan", "198.51.100.38");
  const auto ic = waitForGid("198.51.100.38");
  ASSERT_TRUE(ic);
  std::cout << "podf had " << *ia << ", podg " << *ib << "; after podf ended podh got " << *ic
            << "\n";
  EXPECT_NE(ncclEnv(&c, config_).find(indexLine(ic)), std::string::npos) << ncclEnv(&c, config_);
  EXPECT_NE(ncclEnv(&b, config_).find(indexLine(ib)), std::string::npos) << ncclEnv(&b, config_);
}

TEST_F(SoftRocePodNetworks, Ipv6GidsOfThePodsOwn) {
  // An earlier test took data0 down, and the kernel drops IPv6 addresses with the link.
  ASSERT_EQ(std::system("ip -6 addr replace 2001:db8::20/64 dev data0 nodad"), 0);
  VmPod a("podi", "macvlan", "198.51.100.39", "2001:db8::39");
  const auto ia6 = waitForGid("2001:0db8:0000:0000:0000:0000:0000:0039");
  const auto host6 = waitForGid("2001:0db8:0000:0000:0000:0000:0000:0020");
  ASSERT_TRUE(ia6 && host6);
  EXPECT_NE(ncclEnv(&a, config6_).find(indexLine(ia6)), std::string::npos) << ncclEnv(&a, config6_);
  EXPECT_NE(ncclEnv(nullptr, config6_).find(indexLine(host6)), std::string::npos)
      << ncclEnv(nullptr, config6_);
}

// kube-rdma-nccl-hook as runc runs it at createContainer, here by hand: in the pod's network
// namespace and a mount namespace of its own, the node's nccl.conf (the host's rule, written by
// rdmactl nccl-env on the host) bind-mounted over the container's /etc/nccl.conf.
TEST_F(SoftRocePodNetworks, TheHookGivesEachContainerTheIndexOfItsOwnNamespace) {
  VmPod a("podj", "macvlan", "198.51.100.40");
  VmPod b("podk", "macvlan", "198.51.100.41");
  const auto ia = waitForGid("198.51.100.40");
  const auto ib = waitForGid("198.51.100.41");
  const auto host = waitForGid("198.51.100.20");
  ASSERT_TRUE(ia && ib && host);
  const std::string conf = tmp_ + "/nccl-node.conf";
  std::ofstream(conf) << ncclEnv(nullptr, config_);
  const std::string bundle = tmp_ + "/bundle";
  std::filesystem::create_directories(bundle + "/rootfs/etc");
  std::ofstream(bundle + "/rootfs/etc/nccl.conf") << "";
  std::ofstream(bundle + "/config.json")
      << R"({"root": {"path": "rootfs"}, "process": {"env": []},)"
      << R"( "linux": {"namespaces": [{"type": "network"}]},)"
      << R"( "mounts": [{"destination": "/etc/nccl.conf", "source": ")" << conf << R"("}]})";
  std::ofstream(tmp_ + "/state.json")
      << R"({"ociVersion": "1.1.0", "id": "c", "pid": 1, "bundle": ")" << bundle << R"("})";
  const std::string target = bundle + "/rootfs/etc/nccl.conf";
  const std::string hook = "unshare -m --propagation private sh -c 'mount --bind " + conf + " " +
                           target + " && mount -o remount,bind,ro " + target + " && " +
                           NCCL_HOOK_BINARY + " " + kHookDeadline + " < " + tmp_ +
                           "/state.json && cat " + target + "'";
  // One run each, shown as it was when it fails: running the hook again for the message would
  // show another moment of the GID table.
  const std::string in_a = a.in(hook);
  const std::string in_b = b.in(hook);
  EXPECT_NE(in_a.find(indexLine(ia)), std::string::npos)
      << "podj's own index " << indexLine(ia) << in_a << run(std::string(RDMACTL_BINARY) + " gids");
  EXPECT_NE(in_b.find(indexLine(ib)), std::string::npos)
      << "podk's own index " << indexLine(ib) << in_b;
  // The node's own file keeps the host's index.
  EXPECT_NE(readTestFile(conf).find(indexLine(host)), std::string::npos) << readTestFile(conf);
}

// A netdev takes macvlan or ipvlan children, not both at once ("Device is already in use"): the
// ipvlan pods come last, after every macvlan pod has gone.
TEST_F(SoftRocePodNetworks, IpvlanPodsGetTheirOwnToo) {
  VmPod c("podc", "ipvlan", "198.51.100.33");
  VmPod d("podc2", "ipvlan", "198.51.100.44");
  ASSERT_TRUE(c.ok() && d.ok());
  const auto ic = waitForGid("198.51.100.33");
  const auto id = waitForGid("198.51.100.44");
  ASSERT_TRUE(ic && id);
  std::cout << "ipvlan pods: " << *ic << " and " << *id << "\n";
  EXPECT_NE(ncclEnv(&c, config_).find(indexLine(ic)), std::string::npos) << ncclEnv(&c, config_);
  EXPECT_NE(ncclEnv(&d, config_).find(indexLine(id)), std::string::npos) << ncclEnv(&d, config_);
}

// The kernel's exclusive RDMA netns mode with a device per pod, as the SR-IOV and RDMA CNIs set it
// up for a VF (docs/pod-networks.md): run.sh boots a kernel whose soft-RoCE can move into a
// namespace (Linux 7.x; 6.1's cannot) and guest.sh sets the mode first. A macvlan child of data0
// stands in for the VF's netdev; rxe registers its device in the host's namespace, as a VF's is
// there when the device plugin grants it, and moveIn() moves it into the pod as the RDMA CNI does
// when the pod's sandbox is made, before any of its containers.
class ExclusivePod {
public:
  // `ipv6`, when given, is added first: the IPv4 entry then comes after it in the table.
  ExclusivePod(std::string name, const std::string& ipv4, const std::string& ipv6 = "")
      : name_(std::move(name)), device_("rxe" + name_) {
    const std::string ns = "ip -n " + name_ + " ";
    const std::string script =
        "set -e; ip netns add " + name_ + "; ip link add link data0 name " + name_ +
        "0 type macvlan mode bridge; ip link set " + name_ + "0 netns " + name_ + "; " + ns +
        "link set " + name_ + "0 name net1; " + ns + "link set lo up; " + ns +
        "link set net1 up; ip netns exec " + name_ + " rdma link add " + device_ +
        " type rxe netdev net1; " +
        (ipv6.empty() ? "" : ns + "-6 addr add " + ipv6 + "/64 dev net1 nodad; sleep 1; ") + ns +
        "addr add " + ipv4 + "/24 dev net1";
    const std::string out = run("(" + script + ") 2>&1; echo rc=$?");
    ok_ = out.find("rc=0") != std::string::npos;
    EXPECT_TRUE(ok_) << out;
  }
  ~ExclusivePod() { run("ip netns del " + name_ + " 2>&1"); }
  ExclusivePod(const ExclusivePod&) = delete;
  ExclusivePod& operator=(const ExclusivePod&) = delete;

  bool moveIn() const {
    const std::string out =
        run("rdma dev set " + device_ + " netns " + name_ + " 2>&1; echo rc=$?");
    EXPECT_NE(out.find("rc=0"), std::string::npos) << out;
    return out.find("rc=0") != std::string::npos;
  }
  bool ok() const { return ok_; }
  const std::string& name() const { return name_; }
  const std::string& device() const { return device_; }
  // `command` in the pod's network namespace, with a sysfs of it (ip netns exec mounts one), as
  // the pod's own /sys is.
  std::string in(const std::string& command) const {
    return run("ip netns exec " + name_ + " " + command + " 2>&1");
  }
  // The pod's RoCE v2 entry of its IPv4 address, as the pod reads its device's table.
  std::optional<uint32_t> ownIndex(const std::string& ipv4) const {
    for (int i = 0; i < 200; ++i) {
      const auto rows =
          nlohmann::json::parse(in(std::string(RDMACTL_BINARY) + " --json gids"), nullptr, false);
      for (const auto& row : rows.is_array() ? rows : nlohmann::json::array()) {
        if (row.value("ipv4", "") == ipv4 && row.value("version", "") == "v2") {
          return row.value("index", 0u);
        }
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
    ADD_FAILURE() << ipv4 << " never in " << device_ << "'s table in " << name_;
    return std::nullopt;
  }

private:
  std::string name_;
  std::string device_;
  bool ok_ = false;
};

class SoftRoceExclusive : public SoftRoceVm {
protected:
  void SetUp() override {
    SoftRoceVm::SetUp();
    if (IsSkipped()) {
      return;
    }
    if (readTestFile("/sys/module/ib_core/parameters/netns_mode").rfind('N', 0) != 0) {
      GTEST_SKIP() << "the kernel is in the shared RDMA netns mode (run.sh ... exclusive)";
    }
    tmp_ = std::getenv("TMPDIR") != nullptr ? std::getenv("TMPDIR") : "/tmp";
  }

  // A pool of the pods' devices, as an operator would configure VFs.
  std::string poolConfig(const std::string& device) const {
    const std::string path = tmp_ + "/exclusive-" + device + ".json";
    std::ofstream(path) << R"({"pools": [{"resourceName": "rdma/vf", "selector": {)"
                        << R"("includeVFs": true, "deviceNames": [")" << device << R"("]}}]})";
    return path;
  }

  std::string tmp_;
};

TEST_F(SoftRoceExclusive, EachPodSeesItsOwnDeviceAloneAndGetsItsOwnIndex) {
  ExclusivePod a("pexa", "198.51.100.51");
  ExclusivePod b("pexb", "198.51.100.52");
  ASSERT_TRUE(a.ok() && b.ok() && a.moveIn() && b.moveIn());
  const std::string rdmactl = RDMACTL_BINARY;
  // The host no longer sees them; each pod sees its own device alone, every entry its own.
  const std::string host = run(rdmactl + " gids 2>&1");
  EXPECT_EQ(host.find(a.device()), std::string::npos) << host;
  EXPECT_EQ(host.find(b.device()), std::string::npos) << host;
  const auto index = a.ownIndex("198.51.100.51");
  ASSERT_TRUE(index);
  const auto rows = nlohmann::json::parse(a.in(rdmactl + " --json gids"), nullptr, false);
  ASSERT_TRUE(rows.is_array() && !rows.empty()) << a.in(rdmactl + " gids");
  for (const auto& row : rows) {
    EXPECT_EQ(row["device"], a.device()) << row.dump();
    EXPECT_EQ(row["netns"], "this") << row.dump();
  }
  std::cout << a.device() << " in " << a.name() << ": " << rows.size()
            << " GIDs, all the pod's; its IPv4 one at " << *index << "\n";

  const std::string env = a.in(rdmactl + " nccl-env --config " + poolConfig(a.device()));
  EXPECT_NE(env.find("NCCL_IB_HCA==" + a.device() + ":1\n"), std::string::npos) << env;
  EXPECT_NE(env.find("NCCL_IB_GID_INDEX=" + std::to_string(*index) + "\n"), std::string::npos)
      << env;

  // rdmactl doctor in the pod: devices of its own, and the GID NCCL takes by itself (no index
  // set) is the pod's own, which is what exclusive mode gives.
  const std::string doctor =
      a.in("env KUBERNETES_SERVICE_HOST=10.96.0.1 NCCL_IB_HCA==" + a.device() + ":1 " + rdmactl +
           " --json doctor");
  const auto report = nlohmann::json::parse(doctor.substr(doctor.find('{')), nullptr, false);
  std::map<std::string, std::string> checks;
  for (const auto& check : report.value("checks", nlohmann::json::array())) {
    checks[check.value("name", "")] = check.value("verdict", "") + " " + check.value("detail", "");
  }
  EXPECT_EQ(checks["rdma-netns-mode"].rfind("ok exclusive: this namespace has RDMA devices of its "
                                            "own (" +
                                                a.device() + ")",
                                            0),
            0u)
      << doctor;
  EXPECT_NE(checks["nccl-gid-namespace"].find("NCCL's own choice (NCCL_IB_GID_INDEX unset): this "
                                              "namespace's own GID on " +
                                              a.device() + ":1 index " + std::to_string(*index)),
            std::string::npos)
      << doctor;
}

// Real runc creates each pod's container in its namespace, with kube-rdma-nccl-hook as the CDI
// spec puts it (createContainer) and the node's nccl.conf written while the device was still the
// host's (at Allocate): the hook reads the container's own sysfs and writes the pod's index.
// ib_write_bw between the two pods then moves data with the indices they were given.
TEST_F(SoftRoceExclusive, RuncRunsTheHookWhichWritesEachPodsIndexAndIbWriteBwUsesIt) {
  ExclusivePod c("pexc", "198.51.100.53");
  ExclusivePod d("pexd", "198.51.100.54", "2001:db8::54"); // its IPv4 entry at 2, not 1
  ASSERT_TRUE(c.ok() && d.ok());
  const std::string rdmactl = RDMACTL_BINARY;
  std::map<std::string, std::string> conf;
  for (const ExclusivePod* pod : {&c, &d}) {
    conf[pod->name()] = tmp_ + "/nccl-" + pod->name() + ".conf";
    const std::string node = run(rdmactl + " nccl-env --config " + poolConfig(pod->device()));
    EXPECT_NE(node.find("NCCL_IB_HCA==" + pod->device() + ":1\n"), std::string::npos) << node;
    // The host's namespace has no address on the device's netdev: no index of the host's.
    EXPECT_EQ(node.find("NCCL_IB_GID_INDEX"), std::string::npos) << node;
    std::ofstream(conf[pod->name()]) << node;
  }
  ASSERT_TRUE(c.moveIn() && d.moveIn());
  const auto ic = c.ownIndex("198.51.100.53");
  const auto id = d.ownIndex("198.51.100.54");
  ASSERT_TRUE(ic && id);
  EXPECT_NE(*ic, *id);

  std::map<std::string, std::string> given;
  for (const ExclusivePod* pod : {&c, &d}) {
    const std::string bundle = tmp_ + "/runc-" + pod->name();
    std::filesystem::remove_all(bundle);
    for (const char* dir : {"rootfs/etc", "rootfs/proc", "rootfs/sys", "rootfs/usr"}) {
      std::filesystem::create_directories(bundle + "/" + dir);
    }
    for (const char* link : {"bin", "lib", "lib64"}) {
      std::filesystem::create_symlink(std::string("usr/") + link, bundle + "/rootfs/" + link);
    }
    std::ofstream(bundle + "/rootfs/etc/nccl.conf") << "";
    nlohmann::json config = {
        {"ociVersion", "1.0.2"},
        {"process",
         {{"user", {{"uid", 0}, {"gid", 0}}},
          {"args", {"cat", "/etc/nccl.conf"}},
          {"env", {"PATH=/usr/bin:/bin"}},
          {"cwd", "/"}}},
        {"root", {{"path", "rootfs"}, {"readonly", true}}},
        {"mounts",
         {{{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
          {{"destination", "/sys"},
           {"type", "sysfs"},
           {"source", "sysfs"},
           {"options", {"nosuid", "noexec", "nodev", "ro"}}},
          {{"destination", "/usr"},
           {"type", "bind"},
           {"source", "/usr"},
           {"options", {"rbind", "ro"}}},
          {{"destination", "/etc/nccl.conf"},
           {"type", "bind"},
           {"source", conf[pod->name()]},
           {"options", {"rbind", "ro"}}}}},
        {"hooks",
         {{"createContainer",
           {{{"path", NCCL_HOOK_BINARY},
             {"args",
              {"kube-rdma-nccl-hook", kHookDeadline,
               "--log-file=" + tmp_ + "/nccl-hook-" + pod->name() + ".log"}}}}}}},
        {"linux",
         {{"namespaces",
           {{{"type", "pid"}},
            {{"type", "network"}, {"path", "/run/netns/" + pod->name()}},
            {{"type", "ipc"}},
            {{"type", "uts"}},
            {{"type", "mount"}}}}}}};
    std::ofstream(bundle + "/config.json") << config.dump();
    given[pod->name()] = run("runc run --bundle " + bundle + " ctr-" + pod->name() + " 2>&1");
  }
  EXPECT_NE(given["pexc"].find("NCCL_IB_GID_INDEX=" + std::to_string(*ic) + "\n"),
            std::string::npos)
      << given["pexc"] << readTestFile(tmp_ + "/nccl-hook-pexc.log");
  EXPECT_NE(given["pexd"].find("NCCL_IB_GID_INDEX=" + std::to_string(*id) + "\n"),
            std::string::npos)
      << given["pexd"] << readTestFile(tmp_ + "/nccl-hook-pexd.log");
  EXPECT_EQ(readTestFile(tmp_ + "/nccl-hook-pexc.log.counts"), "own-gid-index 1\n");
  std::cout << "runc's containers: pexc " << lineOf(given["pexc"], "NCCL_IB_GID_INDEX") << ", pexd "
            << lineOf(given["pexd"], "NCCL_IB_GID_INDEX") << "\n";

  // RDMA writes between the two pods, each with its own device and the index it was given.
  const std::string server = tmp_ + "/ib_write_bw-server.log";
  run("ip netns exec pexd timeout 120 ib_write_bw -d " + d.device() + " -x " + std::to_string(*id) +
      " -n 20 >" + server + " 2>&1 &");
  std::string out;
  for (int attempt = 0; attempt < 20; ++attempt) { // until the server listens
    std::this_thread::sleep_for(milliseconds(500));
    out = c.in("timeout 120 ib_write_bw -d " + c.device() + " -x " + std::to_string(*ic) +
               " -n 20 198.51.100.54; echo exit=$?");
    if (out.find("Couldn't connect") == std::string::npos) {
      break;
    }
  }
  EXPECT_NE(out.find("exit=0"), std::string::npos) << out << readTestFile(server);
  std::cout << "ib_write_bw " << c.device() << " -x " << *ic << " -> " << d.device() << " -x "
            << *id << ": " << averageBandwidth(out) << " MB/s average\n";
}

} // namespace
} // namespace kube_rdma
