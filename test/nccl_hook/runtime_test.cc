// kube-rdma-nccl-hook under a real OCI runtime: podman with runc applies the device plugin's CDI
// spec (cdiSpecJson, which names the hook at createContainer) for the roce-pod-network fixture's
// rdma/shared pool, with the node's nccl.conf mounted at /etc/nccl.conf as Allocate mounts it, to
// busybox containers in real network namespaces: one with a pod's addresses on "net1", one with
// only lo (a veth-only pod's case: no GID of its own) and one on the host's network. The hook
// reads the fixture's GID tables (its --sysfs-root) and the container's real /proc/net. Skips
// where podman, runc, busybox or root are missing.

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "common/pools/pools.h"
#include "common/node/sysfs_discovery.h"
#include "plugin/cdi_spec.h"
#include "plugin/pool_resource_manager.h"
#include "test/memlock/podman_sandbox.h"

namespace kube_rdma {
namespace {

const std::string kFixture = std::string(KUBE_RDMA_FIXTURES) + "/roce-pod-network";

class PodmanRuncNcclHook : public testing::Test {
protected:
  void SetUp() override {
    if (const std::string why = sandbox_.unavailableReason(); !why.empty()) {
      GTEST_SKIP() << why;
    }
    const NodeTopology topology = discoverFromSysfs({kFixture + "/sys", kFixture + "/proc"});
    PluginConfig config = defaultPluginConfig();
    config.pools[1].resource_name = "rdma/nccl-hook-test-" + std::to_string(getpid());
    NodePool pool;
    for (auto& p : buildPools(topology, config)) {
      pool = p.spec.resource_name == config.pools[1].resource_name ? p : pool;
    }
    ASSERT_EQ(pool.deviceNames(), (std::vector<std::string>{"mlx5_1", "mlx5_2", "mlx5_3"}));
    kind_ = cdiKind(pool.spec.resource_name);
    MemlockHookConfig memlock;
    memlock.limit.mode = MemlockLimit::Mode::kOff;
    NcclHookConfig hook;
    hook.hook_path = NCCL_HOOK_BINARY;
    hook.log_file = log_;
    hook.sysfs_root = kFixture + "/sys";
    auto spec = nlohmann::json::parse(cdiSpecJson(pool, topology, memlock, hook));
    sandbox_.pointDeviceNodes(spec);
    spec_path_ = cdiSpecPath(PodmanSandbox::kCdiDir, pool.spec.resource_name);
    std::filesystem::create_directories(PodmanSandbox::kCdiDir);
    std::ofstream(spec_path_) << spec.dump(2);

    // What Allocate answers for a container granted mlx5_1 and mlx5_2: the host's rule gives 3.
    auto env = computeNcclSettings(topology, pool, {"mlx5_1", "mlx5_2"});
    ASSERT_TRUE(env.ok()) << env.error().message;
    std::erase_if(*env, [](const auto& s) { return s.first.starts_with("KUBE_RDMA_"); });
    writeTestFile(conf_, *renderNcclConf(*env));
  }
  void TearDown() override {
    if (!spec_path_.empty()) {
      std::filesystem::remove(spec_path_);
    }
  }

  ShellResult run(const std::string& network) {
    return sandbox_.run(kind_ + "=mlx5_1", "", "cat /etc/nccl.conf", network,
                        "-v " + conf_ + ":/etc/nccl.conf:ro");
  }

  PodmanSandbox sandbox_;
  const std::string log_ = sandbox_.dir().path() + "/nccl-hook.log";
  const std::string conf_ = sandbox_.dir().path() + "/nccl-0123.conf";
  std::string kind_;
  std::string spec_path_;
};

TEST_F(PodmanRuncNcclHook, EachContainerReadsTheGidIndexOfItsOwnNetworkNamespace) {
  ASSERT_EQ(readTestFile(conf_), "NCCL_IB_HCA==mlx5_1:1,mlx5_2:1\nNCCL_IB_DISABLE=0\n"
                                 "NCCL_IB_GID_INDEX=3\nNCCL_SOCKET_IFNAME==eth0\n");
  PodNetns pod_a("krdma-poda", {"198.51.100.31/24", "198.51.101.31/24"});
  PodNetns pod_b("krdma-podb", {"198.51.100.32/24"});
  ASSERT_TRUE(pod_a.ok() && pod_b.ok()) << "ip netns failed";

  const ShellResult a = run(pod_a.podmanNetwork());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_NE(a.output.find("\nNCCL_IB_GID_INDEX=7\n"), std::string::npos) << a.output;

  // podB's own GIDs: 9 on mlx5_1, and none here on mlx5_2 (its address there is not in this
  // namespace): no single index, the node's stays.
  const ShellResult b = run(pod_b.podmanNetwork());
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("\nNCCL_IB_GID_INDEX=3\n"), std::string::npos) << b.output;

  const ShellResult lo_only = run("none");
  ASSERT_EQ(lo_only.exit_code, 0) << lo_only.output;
  EXPECT_NE(lo_only.output.find("\nNCCL_IB_GID_INDEX=3\n"), std::string::npos) << lo_only.output;

  const ShellResult host = run("host");
  ASSERT_EQ(host.exit_code, 0) << host.output;
  EXPECT_NE(host.output.find("\nNCCL_IB_GID_INDEX=3\n"), std::string::npos) << host.output;

  const std::string log = readTestFile(log_);
  EXPECT_NE(log.find("gid_index=7 ports=\"mlx5_1:1=7,mlx5_2:1=7\""), std::string::npos) << log;
  EXPECT_NE(log.find("outcome=no-own-gid ports=\"mlx5_1:1=9,mlx5_2:1=none\""), std::string::npos)
      << log;
  EXPECT_NE(log.find("host network: the node's NCCL settings are the container's"),
            std::string::npos)
      << log;
  // The node's file is untouched and nothing was left beside it.
  EXPECT_EQ(readTestFile(conf_).find("NCCL_IB_GID_INDEX=7"), std::string::npos);
}

} // namespace
} // namespace kube_rdma
