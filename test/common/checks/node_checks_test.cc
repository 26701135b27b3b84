// The node checks (common/checks/node_checks.h) on the generated fixtures: the healthy A100 node,
// the A100 node with something wrong for every check (a100-degraded), and single changes to a
// snapshot for the verdicts in between.
#include "common/checks/node_checks.h"

#include <gtest/gtest.h>

#include "common/checks/node_snapshot.h"
#include "common/node/sysfs_discovery.h"

namespace kube_rdma {
namespace {

// What rdmactl supplies from its own process: a current rdma-core, MLNX_OFED's ofed_info, and a
// pod whose runtime applied the CDI spec.
ProcessSide podSide() {
  ProcessSide side;
  side.libibverbs = {"libibverbs", "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0"};
  side.ofed_info = {"ofed_info -s", "MLNX_OFED_LINUX-23.10-0.5.5.0:\n"};
  side.workload.in_pod = true;
  side.workload.kube_rdma_cdi = "1";
  return side;
}

struct Node {
  NodeTopology topology;
  NodeSnapshot snapshot;
};

Node load(const std::string& name, ProcessSide side = podSide()) {
  const std::string base = std::string(KUBE_RDMA_FIXTURES) + "/" + name;
  Node n;
  n.topology = discoverFromSysfs({base + "/sys", base + "/proc"});
  n.snapshot =
      readNodeSnapshot({base + "/sys", base + "/proc", base + "/dev"}, n.topology, std::move(side));
  return n;
}

Check named(const std::vector<Check>& checks, const std::string& name) {
  for (const auto& c : checks) {
    if (c.name == name) {
      return c;
    }
  }
  ADD_FAILURE() << "no check " << name;
  return {};
}

std::vector<Check> run(const Node& n, const PluginConfig& config = defaultPluginConfig()) {
  return runNodeChecks(n.topology, config, n.snapshot);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool hasEvidence(const Check& c, const std::string& path_suffix, const std::string& value) {
  for (const auto& e : c.evidence) {
    if (e.path.size() >= path_suffix.size() &&
        e.path.compare(e.path.size() - path_suffix.size(), path_suffix.size(), path_suffix) == 0 &&
        e.value == value) {
      return true;
    }
  }
  return false;
}

TEST(NodeChecks, HealthyA100NodeIsOkEverywhere) {
  const auto checks = run(load("a100-roce"));
  std::vector<std::string> names;
  for (const auto& c : checks) {
    names.push_back(c.name);
    EXPECT_EQ(c.verdict, Verdict::kOk) << c.name << ": " << c.detail;
    EXPECT_TRUE(c.hint.empty()) << c.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "pcie-link", "pcie-acs", "gpudirect-rdma", "iommu", "roce-mtu", "roce-ecn",
                       "rdma-netns-mode", "hca-firmware", "pool-rates", "pool:rdma/hca",
                       "pool:rdma/shared", "versions", "cdi", "workload-memlock"}));
}

TEST(NodeChecks, HealthyInfiniBandNodeIsOkEverywhere) {
  for (const auto& c : run(load("ib-hdr8"))) {
    EXPECT_EQ(c.verdict, Verdict::kOk) << c.name << ": " << c.detail;
  }
}

TEST(NodeChecks, OutsideAPodTheWorkloadChecksDoNotRun) {
  ProcessSide host = podSide();
  host.workload = {};
  const auto checks = run(load("a100-roce", host));
  EXPECT_EQ(checks.back().name, "versions");
}

TEST(PcieLink, NarrowHcaLinkFailsAndASlowGpuOnlyWarns) {
  const Check c = checkPcieLinks(load("a100-degraded").topology, load("a100-degraded").snapshot);
  EXPECT_EQ(c.verdict, Verdict::kFail);
  EXPECT_TRUE(contains(c.detail, "mlx5_2 (0000:23:00.0) trained at x8 of x16")) << c.detail;
  EXPECT_TRUE(contains(c.detail, "GPU 0000:12:00.0 runs at 2.5 GT/s PCIe of 16.0 GT/s PCIe"))
      << c.detail;
  EXPECT_TRUE(hasEvidence(c, "0000:23:00.0/current_link_width", "8"));
  EXPECT_FALSE(c.hint.empty());

  Node n = load("a100-roce");
  n.snapshot.pci["0000:12:00.0"].current_link_speed.text = "8.0 GT/s PCIe";
  EXPECT_EQ(checkPcieLinks(n.topology, n.snapshot).verdict, Verdict::kWarn);
  n.snapshot.pci["0000:13:00.0"].current_link_speed.text = "8.0 GT/s PCIe"; // mlx5_1
  EXPECT_EQ(checkPcieLinks(n.topology, n.snapshot).verdict, Verdict::kFail);

  Node absent = load("a100-roce");
  absent.snapshot.pci["0000:13:00.0"].max_link_width.text.reset();
  const Check unknown = checkPcieLinks(absent.topology, absent.snapshot);
  EXPECT_EQ(unknown.verdict, Verdict::kUnknown);
  EXPECT_TRUE(hasEvidence(unknown, "0000:13:00.0/max_link_width", "(absent)"));
}

TEST(PcieAcs, RedirectingBridgesBetweenGpuAndHcaWarn) {
  const Node n = load("a100-degraded");
  const Check c = checkPcieAcs(n.topology, n.snapshot);
  EXPECT_EQ(c.verdict, Verdict::kWarn);
  EXPECT_TRUE(contains(c.detail, "0000:11:00.0 (RR,CR, between GPU 0000:12:00.0 and mlx5_1)"))
      << c.detail;
  EXPECT_TRUE(contains(c.detail, "0000:11:01.0 (RR,CR,")) << c.detail;
  EXPECT_TRUE(hasEvidence(c, "0000:11:00.0/config", "ACS control 0x000d (SV,RR,CR)"));

  // Healthy: source validation alone redirects nothing.
  const Node ok = load("a100-roce");
  const Check fine = checkPcieAcs(ok.topology, ok.snapshot);
  EXPECT_EQ(fine.verdict, Verdict::kOk) << fine.detail;
  EXPECT_TRUE(hasEvidence(fine, "0000:11:00.0/config", "ACS control 0x0001 (SV)"));
}

TEST(PcieAcs, ConfigSpaceCutAt64BytesIsUnknownAndSaysWhy) {
  Node n = load("a100-degraded");
  for (auto& [address, files] : n.snapshot.pci) {
    files.config.text->resize(64); // what a reader without CAP_SYS_ADMIN gets
  }
  const Check c = checkPcieAcs(n.topology, n.snapshot);
  EXPECT_EQ(c.verdict, Verdict::kUnknown);
  EXPECT_TRUE(contains(c.detail, "config space stops at 64 bytes")) << c.detail;
  EXPECT_TRUE(contains(c.detail, "CAP_SYS_ADMIN")) << c.detail;
  EXPECT_TRUE(hasEvidence(c, "0000:11:00.0/config", "64 bytes"));
}

TEST(FindAcsControl, WalksTheExtendedCapabilityChain) {
  std::string config(4096, '\0');
  const auto put32 = [&config](size_t at, uint32_t v) {
    for (size_t i = 0; i < 4; ++i) {
      config[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
    }
  };
  EXPECT_EQ(findAcsControl(config).found, AcsControl::Found::kAbsent); // empty chain
  put32(0x100, 0x0001 | (2u << 16) | (0x200u << 20));                  // AER -> 0x200
  put32(0x200, 0x000D | (1u << 16));                                   // ACS, last
  put32(0x204, 0x007Fu | (0x001Cu << 16)); // capability, control RR CR UF
  const AcsControl acs = findAcsControl(config);
  ASSERT_EQ(acs.found, AcsControl::Found::kControl);
  EXPECT_EQ(acs.control,
            kAcsP2pRequestRedirect | kAcsP2pCompletionRedirect | kAcsUpstreamForwarding);
  EXPECT_EQ(acsBitsText(acs.control), "RR,CR,UF");
  put32(0x100, 0x0001 | (0x100u << 20)); // points at itself: ends, no ACS
  EXPECT_EQ(findAcsControl(config).found, AcsControl::Found::kAbsent);
  EXPECT_EQ(findAcsControl(config.substr(0, 64)).found, AcsControl::Found::kTruncated);
  EXPECT_EQ(findAcsControl("").found, AcsControl::Found::kTruncated);
}

TEST(GpuDirect, NoPeermemAndNoDmabufWarns) {
  const Node n = load("a100-degraded");
  const Check c = checkGpuDirect(n.topology, n.snapshot);
  EXPECT_EQ(c.verdict, Verdict::kWarn);
  EXPECT_TRUE(contains(c.detail, "neither nvidia_peermem nor nv_peer_mem is loaded")) << c.detail;
  EXPECT_TRUE(hasEvidence(c, "sys/module/nvidia_peermem", "(absent)"));
  EXPECT_TRUE(hasEvidence(c, "sys/module/nv_peer_mem", "(absent)"));
  EXPECT_TRUE(hasEvidence(c, "proc/modules", "no nvidia_peermem or nv_peer_mem line"));
  EXPECT_TRUE(contains(c.hint, "modprobe nvidia_peermem (nv_peer_mem")) << c.hint;
  EXPECT_TRUE(contains(c.detail, "proprietary")) << c.detail;
  EXPECT_TRUE(contains(c.detail, "kernel 5.4.0-150-generic is older than 5.12")) << c.detail;
  EXPECT_TRUE(contains(c.detail, "driver 535.104.05")) << c.detail;

  const Node ok = load("a100-roce");
  const Check peermem = checkGpuDirect(ok.topology, ok.snapshot);
  EXPECT_EQ(peermem.verdict, Verdict::kOk);
  EXPECT_EQ(peermem.detail, "nvidia_peermem is loaded (driver 535.104.05)");
  EXPECT_TRUE(hasEvidence(peermem, "sys/module/nvidia_peermem", ""));
}

// MLNX_OFED's older stack loads nv_peer_mem instead: GPUDirect RDMA works the same, and either its
// sysfs directory or its /proc/modules line tells.
TEST(GpuDirect, NvPeerMemIsAPeerMemoryClientToo) {
  Node n = load("a100-nv-peer-mem");
  const Check c = checkGpuDirect(n.topology, n.snapshot);
  EXPECT_EQ(c.verdict, Verdict::kOk) << c.detail;
  EXPECT_EQ(c.detail, "nv_peer_mem is loaded (driver 535.104.05)");
  EXPECT_TRUE(hasEvidence(c, "sys/module/nv_peer_mem", ""));
  EXPECT_TRUE(hasEvidence(c, "proc/modules", "nv_peer_mem 16384 0 - Live 0x0000000000000000 (PO)"));
  EXPECT_TRUE(c.hint.empty()) << c.hint;

  n.snapshot.peermem_modules.at("nv_peer_mem").text.reset(); // /proc/modules alone
  const Check line = checkGpuDirect(n.topology, n.snapshot);
  EXPECT_EQ(line.verdict, Verdict::kOk) << line.detail;
  EXPECT_EQ(line.detail, "nv_peer_mem is loaded (driver 535.104.05)");

  n.snapshot.peermem_modules.at("nv_peer_mem").text = ""; // the sysfs directory alone
  n.snapshot.proc_modules.text.reset();
  EXPECT_EQ(checkGpuDirect(n.topology, n.snapshot).detail,
            "nv_peer_mem is loaded (driver 535.104.05)");

  for (auto& [address, files] : n.snapshot.pci) {
    files.iommu_group_type.text = "DMA";
  }
  const Check iommu = checkIommu(n.topology, n.snapshot);
  EXPECT_EQ(iommu.verdict, Verdict::kFail);
  EXPECT_TRUE(contains(iommu.detail, "nv_peer_mem does not work through a translating IOMMU"))
      << iommu.detail;
}

TEST(GpuDirect, DmabufNeedsTheOpenModuleANewKernelAndRdmaCore34) {
  Node n = load("a100-degraded");
  n.snapshot.nvidia_proc_version.text =
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build\n";
  n.snapshot.osrelease.text = "6.1.0-13-amd64";
  const Check ok = checkGpuDirect(n.topology, n.snapshot);
  EXPECT_EQ(ok.verdict, Verdict::kOk) << ok.detail;
  EXPECT_TRUE(contains(ok.detail, "dma-buf")) << ok.detail;
  EXPECT_TRUE(contains(ok.detail, "driver 550.54.15")) << ok.detail;

  n.snapshot.libibverbs.text = "/usr/lib64/libibverbs.so.1.11.33.0";
  const Check old = checkGpuDirect(n.topology, n.snapshot);
  EXPECT_EQ(old.verdict, Verdict::kWarn);
  EXPECT_TRUE(contains(old.detail, "rdma-core 33 is older than 34")) << old.detail;

  // Without /proc/driver/nvidia/version the module's taint tells: P is the proprietary one.
  n.snapshot.libibverbs.text = "/usr/lib/libibverbs.so.1.14.50.0";
  n.snapshot.nvidia_proc_version.text.reset();
  n.snapshot.nvidia_taint.text = "OE";
  EXPECT_EQ(checkGpuDirect(n.topology, n.snapshot).verdict, Verdict::kOk);
  n.snapshot.nvidia_taint.text = "PO";
  EXPECT_EQ(checkGpuDirect(n.topology, n.snapshot).verdict, Verdict::kWarn);
  n.snapshot.nvidia_taint.text.reset(); // no NVIDIA module at all
  EXPECT_EQ(checkGpuDirect(n.topology, n.snapshot).verdict, Verdict::kUnknown);
}

TEST(Iommu, TranslationWarnsAndFailsWhenGpuDirectReliesOnPeermem) {
  Node n = load("a100-degraded");
  const Check warn = checkIommu(n.topology, n.snapshot);
  EXPECT_EQ(warn.verdict, Verdict::kWarn);
  EXPECT_TRUE(contains(warn.detail, "mlx5_1 (0000:13:00.0) (DMA-FQ)")) << warn.detail;
  EXPECT_TRUE(hasEvidence(warn, "0000:12:00.0/iommu_group/type", "DMA-FQ"));
  n.snapshot.peermem_modules.at("nvidia_peermem").text = "";
  const Check fail = checkIommu(n.topology, n.snapshot);
  EXPECT_EQ(fail.verdict, Verdict::kFail);
  EXPECT_TRUE(contains(fail.detail, "nvidia_peermem")) << fail.detail;

  for (auto& [address, files] : n.snapshot.pci) {
    files.iommu_group_type.text.reset(); // IOMMU off: no groups
  }
  EXPECT_EQ(checkIommu(n.topology, n.snapshot).verdict, Verdict::kOk);
}

TEST(RoceMtu, DifferentOrSmallMtusWarn) {
  const Node n = load("a100-degraded");
  const Check c = checkRoceMtu(n.topology, defaultPluginConfig(), n.snapshot);
  EXPECT_EQ(c.verdict, Verdict::kWarn);
  EXPECT_TRUE(contains(c.detail, "MTU 1500 on eth3")) << c.detail;
  EXPECT_TRUE(hasEvidence(c, "class/net/eth3/mtu", "1500"));
  EXPECT_FALSE(contains(c.detail, "eth0")) << "the management netdev is no data netdev";

  Node small = load("a100-roce");
  for (auto& [name, files] : small.snapshot.netdevs) {
    files.mtu.text = "1500";
  }
  const Check same = checkRoceMtu(small.topology, defaultPluginConfig(), small.snapshot);
  EXPECT_EQ(same.verdict, Verdict::kWarn);
  EXPECT_TRUE(contains(same.hint, "4200")) << same.hint;
}

TEST(RdmaNetnsMode, SharedIsOkExclusiveWarnsOnTheNodeAndFailsInAPodWithoutADevice) {
  const Node shared = load("a100-roce");
  const Check ok = checkRdmaNetnsMode(shared.topology, shared.snapshot);
  EXPECT_EQ(ok.verdict, Verdict::kOk);
  EXPECT_TRUE(contains(ok.detail, "shared: every network namespace opens")) << ok.detail;
  EXPECT_TRUE(hasEvidence(ok, "sys/module/ib_core/parameters/netns_mode", "Y"));

  Node node = load("a100-roce", ProcessSide{});
  node.snapshot.ib_core_netns_mode.text = "N\n";
  const Check on_node = checkRdmaNetnsMode(node.topology, node.snapshot);
  EXPECT_EQ(on_node.verdict, Verdict::kWarn);
  EXPECT_TRUE(contains(on_node.detail, "such a pod cannot open them")) << on_node.detail;
  EXPECT_TRUE(contains(on_node.hint, "rdma system set netns shared")) << on_node.hint;

  // In a pod of exclusive mode the kernel's sysfs shows only the namespace's own devices.
  Node pod = load("a100-roce");
  pod.snapshot.ib_core_netns_mode.text = "N\n";
  pod.topology.devices.clear();
  const Check none = checkRdmaNetnsMode(pod.topology, pod.snapshot);
  EXPECT_EQ(none.verdict, Verdict::kFail);
  EXPECT_TRUE(contains(none.detail, "no RDMA device is in this network namespace")) << none.detail;

  Node vf_pod = load("sriov-vfs");
  vf_pod.snapshot.ib_core_netns_mode.text = "N\n";
  vf_pod.topology.devices.resize(1);
  const Check own = checkRdmaNetnsMode(vf_pod.topology, vf_pod.snapshot);
  EXPECT_EQ(own.verdict, Verdict::kOk);
  EXPECT_TRUE(contains(own.detail, "RDMA devices of its own (" + vf_pod.topology.devices[0].name))
      << own.detail;
}

TEST(RdmaNetnsMode, AbsentOrStrangeIsUnknown) {
  Node n = load("a100-roce");
  n.snapshot.ib_core_netns_mode.text.reset();
  const Check absent = checkRdmaNetnsMode(n.topology, n.snapshot);
  EXPECT_EQ(absent.verdict, Verdict::kUnknown);
  EXPECT_TRUE(contains(absent.detail, "ib_core is not loaded")) << absent.detail;
  n.snapshot.ib_core_netns_mode.text = "1\n";
  const Check strange = checkRdmaNetnsMode(n.topology, n.snapshot);
  EXPECT_EQ(strange.verdict, Verdict::kUnknown);
  EXPECT_TRUE(contains(strange.detail, "netns_mode is \"1\"")) << strange.detail;
}

TEST(RoceEcn, DisabledOnSomePortsWarnsAndAbsentFilesAreUnknown) {
  const Node n = load("a100-degraded");
  const Check c = checkRoceEcn(n.topology, defaultPluginConfig(), n.snapshot);
  EXPECT_EQ(c.verdict, Verdict::kWarn);
  EXPECT_TRUE(contains(c.detail, "eth2 np none rp 0-7")) << c.detail;
  EXPECT_TRUE(contains(c.detail, "eth1 np 0-7 rp 0-7")) << c.detail;
  EXPECT_TRUE(contains(c.detail, "the ports differ")) << c.detail;
  EXPECT_TRUE(hasEvidence(c, "class/net/eth2/ecn/roce_np/enable/3", "0"));

  Node off = load("a100-roce");
  for (auto& [name, files] : off.snapshot.netdevs) {
    for (auto& [prio, file] : files.ecn_rp) {
      file.text = "0";
    }
  }
  const Check everywhere = checkRoceEcn(off.topology, defaultPluginConfig(), off.snapshot);
  EXPECT_EQ(everywhere.verdict, Verdict::kWarn);
  EXPECT_TRUE(contains(everywhere.detail, "reaction (rp) is disabled on every port"))
      << everywhere.detail;

  Node inbox = load("a100-roce");
  for (auto& [name, files] : inbox.snapshot.netdevs) {
    files.ecn_np.clear();
    files.ecn_rp.clear();
  }
  EXPECT_EQ(checkRoceEcn(inbox.topology, defaultPluginConfig(), inbox.snapshot).verdict,
            Verdict::kUnknown);
}

TEST(Firmware, OneTypeOnTwoFirmwaresWarns) {
  const Node n = load("a100-degraded");
  const Check c = checkFirmware(n.topology, n.snapshot);
  EXPECT_EQ(c.verdict, Verdict::kWarn);
  EXPECT_TRUE(contains(c.detail, "MT4123: 20.28.1002 on mlx5_4; 20.31.1014 on mlx5_0, mlx5_1"))
      << c.detail;
  EXPECT_TRUE(hasEvidence(c, "class/infiniband/mlx5_4/fw_ver", "20.28.1002"));
}

TEST(PoolRates, PortsOfOnePoolAtDifferentRatesWarn) {
  const Node n = load("a100-degraded");
  const Check c = checkPoolRates(n.topology, defaultPluginConfig(), n.snapshot);
  EXPECT_EQ(c.verdict, Verdict::kWarn);
  EXPECT_TRUE(contains(c.detail, "rdma/shared: 100 Gb/s on mlx5_5:1; 200 Gb/s on mlx5_1:1"))
      << c.detail;
  EXPECT_TRUE(hasEvidence(c, "mlx5_5/ports/1/rate", "100 Gb/sec (4X EDR)"));
}

TEST(Pools, SayWhichPortsAreLeftOutByWhichRuleAndWhichAreUnusable) {
  const Node ok = load("a100-roce");
  const auto healthy = checkPools(ok.topology, defaultPluginConfig(), ok.snapshot);
  ASSERT_EQ(healthy.size(), 2u);
  EXPECT_EQ(healthy[0].detail, "no ports; left out by management HCA: mlx5_0:1; linkLayer: "
                               "mlx5_1:1, mlx5_2:1, mlx5_3:1, mlx5_4:1, mlx5_5:1, mlx5_6:1, "
                               "mlx5_7:1, mlx5_8:1");
  EXPECT_EQ(healthy[0].verdict, Verdict::kOk); // a RoCE node has no InfiniBand port to offer

  const Node n = load("a100-degraded");
  const Check shared = checkPools(n.topology, defaultPluginConfig(), n.snapshot)[1];
  EXPECT_EQ(shared.name, "pool:rdma/shared");
  EXPECT_EQ(shared.verdict, Verdict::kWarn);
  EXPECT_TRUE(contains(shared.detail, "unusable: mlx5_7:1 has no uverbs node")) << shared.detail;

  const Node down = load("port-down");
  const Check d = checkPools(down.topology, defaultPluginConfig(), down.snapshot)[1];
  EXPECT_EQ(d.verdict, Verdict::kWarn);
  EXPECT_TRUE(contains(d.detail, "unusable: mlx5_3:1 is DOWN")) << d.detail;
}

TEST(Pools, AnEmptyPoolOfTheOperatorsWarnsWithTheRules) {
  auto config = parsePluginConfig(R"({"pools":[
      {"resourceName":"rdma/all","selector":{"linkLayer":"Ethernet"}},
      {"resourceName":"rdma/typo","selector":{"deviceNames":["mlx6_*"]}}]})");
  ASSERT_TRUE(config.ok()) << config.error().message;
  const Node n = load("a100-roce");
  const auto checks = checkPools(n.topology, *config, n.snapshot);
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].verdict, Verdict::kOk);
  EXPECT_EQ(checks[1].name, "pool:rdma/typo");
  EXPECT_EQ(checks[1].verdict, Verdict::kWarn);
  EXPECT_EQ(checks[1].detail, "no ports; left out by management HCA: mlx5_0:1; deviceNames: "
                              "mlx5_1:1, mlx5_2:1, mlx5_3:1, mlx5_4:1, mlx5_5:1, mlx5_6:1, "
                              "mlx5_7:1, mlx5_8:1");

  auto shadowed = parsePluginConfig(R"({"pools":[
      {"resourceName":"rdma/first","selector":{}},
      {"resourceName":"rdma/second","selector":{"linkLayer":"Ethernet"}}]})");
  ASSERT_TRUE(shadowed.ok()) << shadowed.error().message;
  const Check second = checkPools(n.topology, *shadowed, n.snapshot)[1];
  EXPECT_EQ(second.verdict, Verdict::kWarn);
  EXPECT_TRUE(contains(second.detail, "taken by rdma/first: mlx5_1:1")) << second.detail;
}

TEST(Versions, ShowsWhatTheNodeRuns) {
  const Node ok = load("a100-roce");
  const Check v = checkVersions(ok.topology, ok.snapshot);
  EXPECT_EQ(v.verdict, Verdict::kOk);
  EXPECT_EQ(v.detail,
            "kernel 5.15.0-91-generic; mlx5_core 23.10-0.5.5; firmware 20.31.1014 (mlx5_0, "
            "mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7, mlx5_8); libibverbs of "
            "rdma-core 44 (/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0); ofed_info -s "
            "MLNX_OFED_LINUX-23.10-0.5.5.0:");
  ProcessSide bare = podSide();
  bare.ofed_info.text.reset();
  const Node inbox = load("a100-degraded", bare);
  const Check u = checkVersions(inbox.topology, inbox.snapshot);
  EXPECT_TRUE(contains(u.detail, "mlx5_core unknown (no version file")) << u.detail;
  EXPECT_TRUE(contains(u.detail, "ofed_info -s not available")) << u.detail;
}

TEST(Workload, NonRootWithASmallMemlockFailsAndIgnoredCdiWarns) {
  ProcessSide side = podSide();
  side.workload.kube_rdma_cdi.reset();
  const Node n = load("a100-degraded", side);
  const auto checks = checkWorkload(n.snapshot);
  const Check cdi = named(checks, "cdi");
  EXPECT_EQ(cdi.verdict, Verdict::kWarn);
  EXPECT_TRUE(contains(cdi.hint, "enable_cdi")) << cdi.hint;
  const Check memlock = named(checks, "workload-memlock");
  EXPECT_EQ(memlock.verdict, Verdict::kFail);
  EXPECT_EQ(memlock.detail, "the workload's memlock soft limit is 64 KiB; CAP_IPC_LOCK does not "
                            "help a non-root process");
  EXPECT_TRUE(hasEvidence(memlock, "1/status", "Uid 1000 1000 1000 1000, CapEff 00000000a80465fb"));

  // Root with CAP_IPC_LOCK (the healthy fixture, 8 MiB) is fine; so is an unlimited limit.
  const Node ok = load("a100-roce");
  const Check root = named(checkWorkload(ok.snapshot), "workload-memlock");
  EXPECT_EQ(root.verdict, Verdict::kOk);
  EXPECT_TRUE(contains(root.detail, "root with CAP_IPC_LOCK")) << root.detail;
  Node unlimited = load("a100-degraded", side);
  unlimited.snapshot.workload.limits.text =
      "Max locked memory         unlimited            unlimited            bytes     \n";
  EXPECT_EQ(named(checkWorkload(unlimited.snapshot), "workload-memlock").verdict, Verdict::kOk);
  unlimited.snapshot.workload.limits.text.reset();
  EXPECT_EQ(named(checkWorkload(unlimited.snapshot), "workload-memlock").verdict,
            Verdict::kUnknown);

  // A container without RDMA device nodes has nothing for CDI to do.
  Node plain = load("a100-degraded", side);
  plain.snapshot.uverbs_nodes = {"rdma_cm"};
  EXPECT_EQ(named(checkWorkload(plain.snapshot), "cdi").verdict, Verdict::kOk);
}

TEST(NodeCheckParsers, VersionsAndSpeeds) {
  EXPECT_EQ(rdmaCoreVersionOf("/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0"), 44);
  EXPECT_EQ(rdmaCoreVersionOf("libibverbs.so.1"), std::nullopt);
  EXPECT_EQ(rdmaCoreVersionOf("libmlx5.so.1.24.44.0"), std::nullopt);
  EXPECT_EQ(kernelVersionOf("6.1.0-13-amd64\n"), (std::pair<int, int>{6, 1}));
  EXPECT_EQ(kernelVersionOf("5.12"), (std::pair<int, int>{5, 12}));
  EXPECT_EQ(kernelVersionOf("linux"), std::nullopt);
  EXPECT_EQ(parseLinkSpeed("16.0 GT/s PCIe\n"), 16.0);
  EXPECT_EQ(parseLinkSpeed("8 GT/s"), 8.0); // before Linux 4.19
  EXPECT_EQ(parseLinkSpeed("2.5 GT/s PCIe"), 2.5);
  EXPECT_EQ(parseLinkSpeed("Unknown"), std::nullopt);
  EXPECT_EQ(parseLinkSpeed("fast GT/s"), std::nullopt);
}

} // namespace
} // namespace kube_rdma
