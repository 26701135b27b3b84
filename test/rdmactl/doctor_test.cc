#include "rdmactl/doctor.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/checks/node_snapshot.h"
#include "common/node/sysfs_discovery.h"

namespace kube_rdma {
namespace {

NodeTopology fixture(const std::string& name) {
  const std::string base = std::string(KUBE_RDMA_FIXTURES) + "/" + name;
  return discoverFromSysfs({base + "/sys", base + "/proc"});
}

// A healthy process on a healthy node: every uverbs node present, unlimited memlock, 16 GiB shm.
DoctorInput healthy(const NodeTopology& topo) {
  DoctorInput in;
  in.topology = &topo;
  in.dev_root = "/dev";
  for (const auto& d : topo.devices) {
    in.uverbs_nodes.insert(d.uverbs);
  }
  in.process.shm_bytes = 16ull << 30;
  in.interfaces = {"eth0", "eth1", "lo"};
  return in;
}

// By value: callers pass the temporary result of runDoctor().
Check find(const std::vector<Check>& checks, const std::string& name) {
  for (const auto& c : checks) {
    if (c.name == name) {
      return c;
    }
  }
  ADD_FAILURE() << "no check " << name;
  return {"<missing>", Verdict::kFail, "", ""};
}

TEST(RdmactlDoctor, HealthyA100NodePasses) {
  const auto topo = fixture("a100-roce");
  const auto checks = runDoctor(healthy(topo));
  EXPECT_FALSE(anyFailed(checks)) << renderChecksText(checks);
  std::vector<std::string> names;
  for (const auto& c : checks) {
    names.push_back(c.name);
    EXPECT_EQ(c.verdict, Verdict::kOk) << c.name << ": " << c.detail;
    EXPECT_TRUE(c.hint.empty()) << c.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"rdma-devices", "ports-active", "roce-gids",
                                             "uverbs-nodes", "memlock", "dev-shm", "nccl-env"}));
}

TEST(RdmactlDoctor, PortDownFailsNamingThePort) {
  const auto topo = fixture("port-down");
  const auto checks = runDoctor(healthy(topo));
  const Check c = find(checks, "ports-active");
  EXPECT_EQ(c.verdict, Verdict::kFail);
  EXPECT_EQ(c.detail, "mlx5_3 port 1 is DOWN/Disabled");
  EXPECT_FALSE(c.hint.empty());
  EXPECT_TRUE(anyFailed(checks));
}

TEST(RdmactlDoctor, RocePortWithoutAnIpv4V2GidFails) {
  auto topo = fixture("sparse-gids");
  topo.devices[1].ports[0].gids.resize(2); // only the link-local pair left
  const Check c = find(runDoctor(healthy(topo)), "roce-gids");
  EXPECT_EQ(c.verdict, Verdict::kFail);
  EXPECT_NE(c.detail.find("mlx5_1 port 1 (eth2)"), std::string::npos) << c.detail;
}

TEST(RdmactlDoctor, MissingUverbsNodeFails) {
  const auto topo = fixture("a100-roce");
  auto in = healthy(topo);
  in.uverbs_nodes.erase(topo.findDevice("mlx5_4")->uverbs);
  const Check c = find(runDoctor(in), "uverbs-nodes");
  EXPECT_EQ(c.verdict, Verdict::kFail);
  EXPECT_NE(c.detail.find("mlx5_4 (/dev/infiniband/" + topo.findDevice("mlx5_4")->uverbs + ")"),
            std::string::npos)
      << c.detail;
}

TEST(RdmactlDoctor, MemlockAndShmThresholds) {
  const auto topo = fixture("a100-roce");
  auto in = healthy(topo);
  in.process.memlock_bytes = 8ull << 20;
  EXPECT_EQ(find(runDoctor(in), "memlock").verdict, Verdict::kFail);
  in.process.cap_ipc_lock = true;
  EXPECT_EQ(find(runDoctor(in), "memlock").verdict, Verdict::kOk);
  in.process.cap_ipc_lock = false;
  in.process.memlock_bytes = 64ull << 30;
  EXPECT_EQ(find(runDoctor(in), "memlock").verdict, Verdict::kWarn);

  in.process.shm_bytes = 64ull << 20; // a container runtime's default
  const Check shm = find(runDoctor(in), "dev-shm");
  EXPECT_EQ(shm.verdict, Verdict::kFail);
  EXPECT_EQ(shm.detail, "/dev/shm is 64 MiB");
  in.process.shm_bytes = 512ull << 20;
  EXPECT_EQ(find(runDoctor(in), "dev-shm").verdict, Verdict::kWarn);
  in.process.shm_bytes.reset();
  EXPECT_EQ(find(runDoctor(in), "dev-shm").detail, "/dev/shm is not mounted");
}

TEST(RdmactlDoctor, NcclIbHcaPrefixOverMatchAndUnknownNames) {
  const auto topo = fixture("mlx5-1-10");
  auto in = healthy(topo);
  in.nccl_env = {{"NCCL_IB_HCA", "mlx5_1"}};
  const Check over = find(runDoctor(in), "nccl-ib-hca");
  EXPECT_EQ(over.verdict, Verdict::kWarn);
  EXPECT_NE(over.detail.find("also matches mlx5_1, mlx5_10, mlx5_11"), std::string::npos)
      << over.detail;

  in.nccl_env = {{"NCCL_IB_HCA", "=mlx5_1:1,mlx5_99"}};
  const Check unknown = find(runDoctor(in), "nccl-ib-hca");
  EXPECT_EQ(unknown.verdict, Verdict::kFail);
  EXPECT_NE(unknown.detail.find("\"mlx5_99\" matches no device"), std::string::npos)
      << unknown.detail;

  in.nccl_env = {{"NCCL_IB_HCA", "=mlx5_1:1,mlx5_2:1"}};
  const Check good = find(runDoctor(in), "nccl-ib-hca");
  EXPECT_EQ(good.verdict, Verdict::kOk) << good.detail;
  EXPECT_NE(good.detail.find("selects mlx5_1:1, mlx5_2:1"), std::string::npos) << good.detail;
}

TEST(RdmactlDoctor, NcclIbHcaOnRenamedDevicesSelectsNothing) {
  const auto topo = fixture("renamed-rocep");
  auto in = healthy(topo);
  in.nccl_env = {{"NCCL_IB_HCA", "mlx5"}};
  const Check c = find(runDoctor(in), "nccl-ib-hca");
  EXPECT_EQ(c.verdict, Verdict::kFail);
  EXPECT_NE(c.detail.find("selects nothing"), std::string::npos) << c.detail;
}

TEST(RdmactlDoctor, GidIndexMustPointAtARoutableV2Gid) {
  const auto topo = fixture("sparse-gids");
  auto in = healthy(topo);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"0", "mlx5_0 port 1 index 0 is link-local"},
      {"2", "mlx5_0 port 1 index 2 is empty"},
      {"4", "mlx5_0 port 1 index 4 is RoCE v1"},
  };
  for (const auto& [value, want] : cases) {
    in.nccl_env = {{"NCCL_IB_GID_INDEX", value}};
    const Check c = find(runDoctor(in), "nccl-ib-gid-index");
    EXPECT_EQ(c.verdict, Verdict::kFail) << value;
    EXPECT_NE(c.detail.find(want), std::string::npos) << c.detail;
  }
  in.nccl_env = {{"NCCL_IB_GID_INDEX", "5"}};
  EXPECT_EQ(find(runDoctor(in), "nccl-ib-gid-index").verdict, Verdict::kOk);
  in.nccl_env = {{"NCCL_IB_GID_INDEX", "0x5"}}; // NCCL reads it with strtoll(.., 0)
  EXPECT_EQ(find(runDoctor(in), "nccl-ib-gid-index").verdict, Verdict::kOk);
  in.nccl_env = {{"NCCL_IB_GID_INDEX", "three"}};
  EXPECT_EQ(find(runDoctor(in), "nccl-ib-gid-index").verdict, Verdict::kFail);
  // Only the ports NCCL_IB_HCA selects are checked.
  in.nccl_env = {{"NCCL_IB_GID_INDEX", "3"}, {"NCCL_IB_HCA", "=mlx5_9"}};
  EXPECT_EQ(find(runDoctor(in), "nccl-ib-gid-index").verdict, Verdict::kOk);
}

// In a pod on a macvlan network: the roce-pod-network fixture seen from the pod's namespace.
NodeTopology podView(const std::string& pod) {
  const std::string base = std::string(KUBE_RDMA_FIXTURES) + "/roce-pod-network";
  return discoverFromSysfs({base + "/sys", base + "/pods/" + pod + "/proc"});
}

TEST(RdmactlDoctor, SaysWhetherTheGidNcclUsesIsThePodsOwn) {
  const NodeTopology pod_a = podView("podA");
  DoctorInput in = healthy(pod_a);
  in.nccl_env = {{"NCCL_IB_HCA", "=mlx5_1:1,mlx5_2:1"}};
  // The host's index, from a node's nccl.conf the hook could not replace.
  in.nccl_conf = {{"NCCL_IB_HCA", "=mlx5_9:1"}, {"NCCL_IB_GID_INDEX", "3"}};
  Check c = find(runDoctor(in), "nccl-gid-namespace");
  EXPECT_EQ(c.verdict, Verdict::kFail);
  EXPECT_EQ(c.detail, "NCCL_IB_GID_INDEX=3: another namespace's GID (the host's or another pod's) "
                      "on mlx5_1:1 uses index 3, this namespace's own is 7; mlx5_2:1 uses index 3, "
                      "this namespace's own is 7");
  EXPECT_NE(c.hint.find("NCCL_IB_GID_INDEX=7"), std::string::npos) << c.hint;

  // NCCL's own choice (index unset) takes the host's lowest v2 entry, not the pod's.
  in.nccl_conf.clear();
  c = find(runDoctor(in), "nccl-gid-namespace");
  EXPECT_EQ(c.verdict, Verdict::kFail) << c.detail;
  EXPECT_NE(c.detail.find("NCCL's own choice"), std::string::npos) << c.detail;

  in.nccl_conf = {{"NCCL_IB_GID_INDEX", "7"}};
  c = find(runDoctor(in), "nccl-gid-namespace");
  EXPECT_EQ(c.verdict, Verdict::kOk);
  EXPECT_EQ(c.detail, "NCCL_IB_GID_INDEX=7: this namespace's own GID on mlx5_1:1 index 7, "
                      "mlx5_2:1 index 7");

  // A pod on the cluster network only has no GID of its own: the host's is what it can use.
  const NodeTopology bridge = podView("podbridge");
  DoctorInput veth = healthy(bridge);
  veth.nccl_conf = {{"NCCL_IB_HCA", "=mlx5_1:1"}, {"NCCL_IB_GID_INDEX", "3"}};
  c = find(runDoctor(veth), "nccl-gid-namespace");
  EXPECT_EQ(c.verdict, Verdict::kOk);
  EXPECT_NE(c.detail.find("no GID of its own on mlx5_1:1"), std::string::npos) << c.detail;
}

TEST(RdmactlDoctor, IbDisableAndSocketIfname) {
  const auto topo = fixture("a100-roce");
  auto in = healthy(topo);
  in.nccl_env = {{"NCCL_IB_DISABLE", "1"}, {"NCCL_SOCKET_IFNAME", "=ens5"}};
  const auto checks = runDoctor(in);
  EXPECT_EQ(find(checks, "nccl-ib-disable").verdict, Verdict::kFail);
  const Check ifname = find(checks, "nccl-socket-ifname");
  EXPECT_EQ(ifname.verdict, Verdict::kFail);
  EXPECT_NE(ifname.detail.find("matches no interface"), std::string::npos);
  EXPECT_NE(find(checks, "nccl-env").detail.find("NCCL_IB_DISABLE=1"), std::string::npos);

  in.nccl_env = {{"NCCL_IB_DISABLE", "0"}, {"NCCL_SOCKET_IFNAME", "eth"}};
  const auto ok = runDoctor(in);
  EXPECT_FALSE(anyFailed(ok)) << renderChecksText(ok);
  EXPECT_EQ(find(ok, "nccl-socket-ifname").detail, "NCCL_SOCKET_IFNAME=eth selects eth0, eth1");
  in.nccl_env = {{"NCCL_SOCKET_IFNAME", "e"}};
  EXPECT_EQ(find(runDoctor(in), "nccl-socket-ifname").verdict, Verdict::kWarn);
}

TEST(RdmactlDoctor, NoDevicesFailsAndTheReportsRender) {
  const NodeTopology empty;
  auto in = healthy(empty);
  const auto checks = runDoctor(in);
  EXPECT_EQ(checks.front().name, "rdma-devices");
  EXPECT_EQ(checks.front().verdict, Verdict::kFail);
  const std::string text = renderChecksText(checks);
  EXPECT_EQ(text.rfind("FAIL rdma-devices", 0), 0u) << text;
  EXPECT_NE(text.find("hint: "), std::string::npos);
  EXPECT_NE(text.find("summary: 3 ok, 0 warn, 1 failed"), std::string::npos) << text;
  const auto json = nlohmann::json::parse(renderChecksJson(checks));
  EXPECT_EQ(json["ok"], false);
  EXPECT_EQ(json["checks"][0]["verdict"], "fail");
  EXPECT_EQ(json["summary"]["fail"], 1);
  EXPECT_EQ(json["summary"]["ok"], 3);
  EXPECT_TRUE(json["checks"][0]["evidence"].is_array());
}

TEST(RdmactlDoctor, NodeChecksRunAfterTheDeviceChecksAndShowTheirEvidence) {
  const std::string base = std::string(KUBE_RDMA_FIXTURES) + "/a100-degraded";
  const auto topo = fixture("a100-degraded");
  const PluginConfig config = defaultPluginConfig();
  const NodeSnapshot snapshot =
      readNodeSnapshot({base + "/sys", base + "/proc", base + "/dev"}, topo, {});
  auto in = healthy(topo);
  in.config = &config;
  in.snapshot = &snapshot;
  const auto checks = runDoctor(in);
  std::vector<std::string> names;
  for (const auto& c : checks) {
    names.push_back(c.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "rdma-devices", "ports-active", "roce-gids", "uverbs-nodes", "pcie-link",
                       "pcie-acs", "gpudirect-rdma", "iommu", "roce-mtu", "roce-ecn",
                       "rdma-netns-mode", "hca-firmware", "pool-rates", "pool:rdma/hca",
                       "pool:rdma/shared", "versions", "memlock", "dev-shm", "nccl-env"}));
  const std::string text = renderChecksText(checks);
  EXPECT_NE(text.find("FAIL pcie-link"), std::string::npos) << text;
  EXPECT_NE(text.find("read: " + base + "/sys/bus/pci/devices/0000:23:00.0/current_link_width = 8"),
            std::string::npos)
      << text;
  // An ok check's evidence (versions) stays in the JSON only.
  EXPECT_EQ(text.find("read: " + base + "/sys/module/mlx5_core/version"), std::string::npos)
      << text;
  EXPECT_NE(text.find("summary: 10 ok, 8 warn, 1 failed, 0 unknown"), std::string::npos) << text;

  Check unknown{"x", Verdict::kUnknown, "could not tell", "", {{"/sys/x", "(absent)"}}};
  EXPECT_EQ(renderChecksText({unknown}), "unknown x                   could not tell\n"
                                         "                         read: /sys/x = (absent)\n"
                                         "summary: 0 ok, 0 warn, 0 failed, 1 unknown\n");
  const auto json = nlohmann::json::parse(renderChecksJson({unknown}));
  EXPECT_EQ(json, nlohmann::json::parse(R"json({"ok": true,
      "summary": {"ok": 0, "warn": 0, "fail": 0, "unknown": 1},
      "checks": [{"name": "x", "verdict": "unknown", "detail": "could not tell", "hint": "",
                  "evidence": [{"path": "/sys/x", "value": "(absent)"}]}]})json"));
}

} // namespace
} // namespace kube_rdma
