// The memlock hook under a real OCI runtime: podman with runc applies the plugin's CDI spec
// (cdiSpecJson) to a container on a busybox root filesystem, started under a runtime
// RLIMIT_MEMLOCK of 64 KiB soft / 8 MiB hard, and the container reads its own /proc/1/limits
// (PodmanSandbox says how). The spec goes to /var/run/cdi under a kind of this test process's own
// and is removed afterwards.

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "plugin/cdi_spec.h"
#include "plugin/pool_resource_manager.h"
#include "test/memlock/memlock_test_support.h"
#include "test/memlock/podman_sandbox.h"

namespace kube_rdma {
namespace {

class PodmanRunc : public testing::Test {
protected:
  void SetUp() override {
    if (const std::string why = sandbox_.unavailableReason(); !why.empty()) {
      GTEST_SKIP() << why;
    }
    pool_ = a100SharedPool();
    pool_.spec.resource_name = "rdma/memlock-test-" + std::to_string(getpid());
    spec_path_ = cdiSpecPath(PodmanSandbox::kCdiDir, pool_.spec.resource_name);
  }
  void TearDown() override {
    if (!spec_path_.empty()) {
      std::filesystem::remove(spec_path_);
    }
  }

  // The plugin's spec for the pool with `limit`, its device nodes pointed at mknod-made ones.
  void writeSpec(const MemlockLimit& limit) {
    MemlockHookConfig memlock;
    memlock.limit = limit;
    memlock.hook_path = MEMLOCK_HOOK_BINARY;
    memlock.log_file = log_;
    NcclHookConfig no_nccl_hook;
    no_nccl_hook.enabled = false;
    auto spec = nlohmann::json::parse(cdiSpecJson(pool_, a100Topology(), memlock, no_nccl_hook));
    sandbox_.pointDeviceNodes(spec);
    std::filesystem::create_directories(PodmanSandbox::kCdiDir);
    std::ofstream(spec_path_) << spec.dump(2);
  }

  // The container's own limit and what it sees of the CDI spec.
  ShellResult runWithMlx5_1() {
    return sandbox_.run(
        cdiKind(pool_.spec.resource_name) + "=mlx5_1", "",
        "cat /proc/1/limits; echo KUBE_RDMA_CDI=$KUBE_RDMA_CDI; ls /dev/infiniband");
  }

  PodmanSandbox sandbox_;
  const std::string log_ = sandbox_.dir().path() + "/memlock-hook.log";
  NodePool pool_;
  std::string spec_path_;
};

TEST_F(PodmanRunc, WithoutTheHookTheContainerKeepsTheRuntimesLimit) {
  writeSpec(MemlockLimit{MemlockLimit::Mode::kOff});
  const ShellResult r = runWithMlx5_1();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(memlockOf(r.output), "65536 8388608") << r.output;
  EXPECT_NE(r.output.find("KUBE_RDMA_CDI=1\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rdma_cm\nuverbs1\n"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(log_));
}

TEST_F(PodmanRunc, TheHookRaisesTheContainersSoftLimit) {
  writeSpec(MemlockLimit{MemlockLimit::Mode::kBytes, 4194304});
  const ShellResult r = runWithMlx5_1();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(memlockOf(r.output), "4194304 8388608") << r.output;
  EXPECT_NE(r.output.find("KUBE_RDMA_CDI=1\n"), std::string::npos) << r.output;
  EXPECT_NE(readTestFile(log_).find("\"memlock raised\""), std::string::npos) << readTestFile(log_);
}

TEST_F(PodmanRunc, UnlimitedGoesAsHighAsTheRuntimesCapabilitiesAllow) {
  writeSpec(MemlockLimit{});
  const ShellResult r = runWithMlx5_1();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The hook runs with the runtime's capabilities: without CAP_SYS_RESOURCE (as on a machine
  // whose root lacks it) the hard limit stays and the soft one reaches it.
  EXPECT_EQ(memlockOf(r.output), haveCapSysResource() ? "unlimited unlimited" : "8388608 8388608")
      << r.output;
}

} // namespace
} // namespace kube_rdma
