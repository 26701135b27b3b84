#include "common/pools/container_nccl.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/node/sysfs_discovery.h"

namespace kube_rdma {
namespace {

const std::string kFixture = std::string(KUBE_RDMA_FIXTURES) + "/roce-pod-network";

// The fixture's GID tables as seen from `pod`'s network namespace ("" for the host's).
NodeTopology seenFrom(const std::string& pod) {
  return discoverFromSysfs(
      {kFixture + "/sys", pod.empty() ? kFixture + "/proc" : kFixture + "/pods/" + pod + "/proc"});
}

const NcclEnv kNode = {{"NCCL_IB_HCA", "=mlx5_1:1,mlx5_2:1"},
                       {"NCCL_IB_DISABLE", "0"},
                       {"NCCL_IB_GID_INDEX", "3"},
                       {"NCCL_SOCKET_IFNAME", "=eth0"}};

TEST(ResolveContainerNcclConf, ThePodsOwnIndexReplacesTheHosts) {
  auto resolved = resolveContainerNcclConf(kNode, seenFrom("podA"), {});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_TRUE(resolved->own_gid_index);
  EXPECT_EQ(resolved->choice.index, 7u);
  NcclEnv want = kNode;
  want[2].second = "7";
  EXPECT_EQ(resolved->settings, want);
  EXPECT_EQ(resolved->ports, (std::vector<HcaPort>{{"mlx5_1", 1}, {"mlx5_2", 1}}));
}

TEST(ResolveContainerNcclConf, TheHostsNamespaceGetsWhatTheNodeDaemonComputed) {
  auto resolved = resolveContainerNcclConf(kNode, seenFrom(""), {});
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(resolved->choice.index, 3u);
  EXPECT_EQ(resolved->settings, kNode);
}

TEST(ResolveContainerNcclConf, NoSingleOwnIndexKeepsTheNodesSettings) {
  auto podb = resolveContainerNcclConf(kNode, seenFrom("podB"), {});
  ASSERT_TRUE(podb.ok());
  EXPECT_FALSE(podb->own_gid_index);
  EXPECT_EQ(podb->choice.outcome, GidChoice::Outcome::kPortsDisagree);
  EXPECT_EQ(podb->choice.port_indexes, (std::vector<std::optional<uint32_t>>{9u, 11u}));
  EXPECT_EQ(podb->settings, kNode);

  auto bridge = resolveContainerNcclConf(kNode, seenFrom("podbridge"), {});
  ASSERT_TRUE(bridge.ok());
  EXPECT_EQ(bridge->choice.outcome, GidChoice::Outcome::kNoOwnGid);
  EXPECT_EQ(bridge->settings, kNode);
}

TEST(ResolveContainerNcclConf, AnIndexTheNodeDidNotHaveIsAddedAfterNcclIbDisable) {
  const NcclEnv node = {{"NCCL_IB_HCA", "=mlx5_3:1"}, {"NCCL_IB_DISABLE", "0"}, {"X", "1"}};
  auto resolved = resolveContainerNcclConf(node, seenFrom("podB"), {});
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(resolved->settings, (NcclEnv{{"NCCL_IB_HCA", "=mlx5_3:1"},
                                         {"NCCL_IB_DISABLE", "0"},
                                         {"NCCL_IB_GID_INDEX", "5"},
                                         {"X", "1"}}));
}

TEST(DiscoverPorts, ReadsTheNamedPortsAsDiscoveryDoesAndNamesTheMissingOnes) {
  const std::string proc = kFixture + "/pods/podA/proc";
  const NodeTopology ports = discoverPorts(
      {kFixture + "/sys", proc}, {{"mlx5_1", 1}, {"mlx5_2", 1}, {"mlx5_2", 2}, {"mlx5_9", 1}}, {});
  const NodeTopology whole = seenFrom("podA");
  ASSERT_EQ(ports.devices.size(), 2u);
  EXPECT_EQ(ports.addresses, whole.addresses);
  for (const auto& device : ports.devices) {
    ASSERT_EQ(device.ports.size(), 1u) << device.name;
    const Port& want = whole.findDevice(device.name)->ports[0];
    EXPECT_EQ(device.ports[0].gids, want.gids) << device.name;
    EXPECT_EQ(device.ports[0].state, want.state) << device.name;
    EXPECT_EQ(device.ports[0].link_layer, want.link_layer) << device.name;
    EXPECT_EQ(device.ports[0].gid_table_len, want.gid_table_len) << device.name;
  }
  ASSERT_EQ(ports.warnings.size(), 2u);
  EXPECT_EQ(ports.warnings[0].path, "class/infiniband/mlx5_2/ports/2");
  EXPECT_EQ(ports.warnings[1].message, "no such port");
  EXPECT_EQ(hcaPortsOf(kNode),
            (std::vector<std::pair<std::string, uint32_t>>{{"mlx5_1", 1}, {"mlx5_2", 1}}));
}

TEST(ResolveContainerNcclConf, ErrorsNameTheEntry) {
  const NodeTopology topology = seenFrom("podA");
  EXPECT_EQ(resolveContainerNcclConf({{"NCCL_IB_DISABLE", "0"}}, topology, {}).error().message,
            "the node's nccl.conf has no NCCL_IB_HCA");
  EXPECT_EQ(resolveContainerNcclConf({{"NCCL_IB_HCA", "=mlx5_1"}}, topology, {}).error().message,
            "NCCL_IB_HCA entry mlx5_1 names no port");
  EXPECT_EQ(resolveContainerNcclConf({{"NCCL_IB_HCA", "=mlx5_1:2"}}, topology, {}).error().message,
            "NCCL_IB_HCA entry mlx5_1:2: no such port");
}

// What the hook decides when the NRI plugin was there first: its NCCL_IB_GID_INDEX in the
// environment is the container's own (the annotation says so), not the user's, and the hook
// still writes the same index into nccl.conf for processes that do not inherit the environment.
TEST(DecideContainerGid, TheNriPluginsValueIsNotTheUsers) {
  const std::string dir = ::testing::TempDir() + "/decide-container-gid";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/nccl.conf") << "NCCL_IB_HCA==mlx5_1:1,mlx5_2:1\nNCCL_IB_GID_INDEX=3\n";
  ContainerSpec spec;
  spec.own_network_namespace = true;
  spec.mounts = {{"/etc/nccl.conf", dir + "/nccl.conf"}};
  spec.env = {"NCCL_IB_GID_INDEX=7"};
  const ContainerGidInputs in{
      "c1", "/etc/nccl.conf", {kFixture + "/sys", kFixture + "/pods/podA/proc"}, {}};
  EXPECT_EQ(decideContainerGid(spec, in).outcome, NcclHookOutcome::kUserSet);
  spec.nri_gid_index = "7";
  const ContainerGidDecision decision = decideContainerGid(spec, in);
  EXPECT_EQ(decision.outcome, NcclHookOutcome::kOwnGidIndex) << decision.message;
  EXPECT_EQ(decision.resolved->choice.index, 7u);
  EXPECT_EQ(decision.node_conf, dir + "/nccl.conf");
  spec.nri_gid_index = "5"; // a user's value beside a stale annotation stays the user's
  EXPECT_EQ(decideContainerGid(spec, in).outcome, NcclHookOutcome::kUserSet);
  std::filesystem::remove_all(dir);
}

// The kernel's exclusive RDMA netns mode: the host's sysfs shows no device moved into a pod, so
// the tables come from the container's own /sys (here the fixture's, which the runtime would have
// mounted in the pod's namespace); a spec that cannot give one says so.
TEST(DecideContainerGid, InExclusiveModeTheTablesAreTheContainersOwnSysfs) {
  const std::filesystem::path dir = ::testing::TempDir() + "/decide-exclusive";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "host-sys/module/ib_core/parameters");
  std::ofstream(dir / "host-sys/module/ib_core/parameters/netns_mode") << "N\n";
  std::filesystem::create_directories(dir / "rootfs");
  std::filesystem::create_directory_symlink(kFixture + "/sys", dir / "rootfs/sys");
  std::ofstream(dir / "nccl.conf") << "NCCL_IB_HCA==mlx5_1:1,mlx5_2:1\n";
  ASSERT_TRUE(rdmaNetnsIsExclusive((dir / "host-sys").string()));
  EXPECT_FALSE(rdmaNetnsIsExclusive(kFixture + "/sys")); // "Y"
  EXPECT_FALSE(rdmaNetnsIsExclusive((dir / "absent").string()));

  ContainerSpec spec;
  spec.own_network_namespace = true;
  spec.rootfs = (dir / "rootfs").string();
  spec.mounts = {{"/sys", "sysfs"}, {"/etc/nccl.conf", (dir / "nccl.conf").string()}};
  ContainerGidInputs in{
      "c1", "/etc/nccl.conf", {(dir / "host-sys").string(), kFixture + "/pods/podA/proc"}, {}};
  // Shared mode would read the host's sysfs, which has no such device.
  const ContainerGidDecision shared = decideContainerGid(spec, in);
  EXPECT_EQ(shared.outcome, NcclHookOutcome::kError);
  in.exclusive_rdma_netns = true;
  const ContainerGidDecision own = decideContainerGid(spec, in);
  ASSERT_EQ(own.outcome, NcclHookOutcome::kOwnGidIndex) << own.message;
  EXPECT_EQ(own.resolved->choice.index, 7u);

  ContainerSpec no_sys = spec;
  no_sys.mounts.erase(no_sys.mounts.begin());
  const ContainerGidDecision unread = decideContainerGid(no_sys, in);
  EXPECT_EQ(unread.outcome, NcclHookOutcome::kExclusiveNetns);
  EXPECT_EQ(unread.level, LogLevel::kWarn);
  EXPECT_NE(unread.message.find("mounts no /sys"), std::string::npos) << unread.message;
  ContainerSpec before_runtime = spec; // what the NRI plugin has: no root filesystem yet
  before_runtime.rootfs.clear();
  const ContainerGidDecision later = decideContainerGid(before_runtime, in);
  EXPECT_EQ(later.outcome, NcclHookOutcome::kExclusiveNetns);
  EXPECT_EQ(later.level, LogLevel::kInfo);
  EXPECT_NE(later.message.find("kube-rdma-nccl-hook resolves"), std::string::npos) << later.message;
  std::filesystem::remove_all(dir);
}

TEST(ParseNcclHookArgs, TheDeadlineIsTwoSecondsUnlessGivenOneToSixty) {
  EXPECT_EQ(parseNcclHookArgs({}).deadline_seconds, 2u);
  const NcclHookArgs sixty = parseNcclHookArgs({"--deadline-seconds=60"});
  EXPECT_EQ(sixty.deadline_seconds, 60u);
  EXPECT_EQ(sixty.problem, "");
  for (const char* bad : {"--deadline-seconds=0", "--deadline-seconds=61", "--deadline-seconds=x",
                          "--deadline-seconds="}) {
    const NcclHookArgs args = parseNcclHookArgs({bad});
    EXPECT_NE(args.problem.find("--deadline-seconds"), std::string::npos) << bad;
    EXPECT_EQ(args.deadline_seconds, 2u) << bad;
  }
}

} // namespace
} // namespace kube_rdma
