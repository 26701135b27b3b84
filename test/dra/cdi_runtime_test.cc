// A claim's CDI spec under a real OCI runtime: podman with runc injects one device of the spec
// renderClaim renders for the two-NIC claim into a busybox container (PodmanSandbox says how).
// The container must get the uverbs and rdma_cm nodes, the KUBE_RDMA_* variables, the claim's
// nccl.conf at /etc/nccl.conf, the memlock hook's raised limit, and no NCCL_* variable: the pod's
// own NCCL_IB_HCA stays. The spec goes to /var/run/cdi under a claim UID of this process's own and
// is removed afterwards.

#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "test/dra/dra_test_support.h"
#include "test/memlock/podman_sandbox.h"

namespace kube_rdma {
namespace {

class PodmanRuncDra : public testing::Test {
protected:
  void SetUp() override {
    if (const std::string why = sandbox_.unavailableReason(); !why.empty()) {
      GTEST_SKIP() << why;
    }
  }
  void TearDown() override {
    if (!spec_path_.empty()) {
      std::filesystem::remove(spec_path_);
    }
  }

  // Prepares the two-NIC claim under a UID of this process and writes its files, the spec into
  // /var/run/cdi with its device nodes pointed at mknod-made ones. Returns the CDI ID of the
  // claim's first device.
  std::string prepareTwoNicClaim() {
    return prepareClaim(nlohmann::json::parse(readTestData("claim-two-nics.json")), "a100-roce");
  }

  // `claim` under a UID of this process, prepared on the fixture `node`: its files written, the
  // spec into /var/run/cdi, the hooks the test's builds. Returns the CDI ID of its first device.
  std::string prepareClaim(nlohmann::json claim, const std::string& node) {
    char uid[40];
    std::snprintf(uid, sizeof uid, "3f1c9a2e-8d4b-4a6f-9c1e-%012x",
                  static_cast<unsigned>(getpid()));
    claim["metadata"]["uid"] = uid;
    const std::string tmp = sandbox_.dir().path();
    PrepareContext context = testContext(tmp);
    context.cdi_dir = PodmanSandbox::kCdiDir;
    context.config.memlock.hook_path = MEMLOCK_HOOK_BINARY;
    context.config.memlock.log_file = tmp + "/memlock-hook.log";
    context.config.nccl_hook.hook_path = NCCL_HOOK_BINARY;
    context.config.nccl_hook.log_file = nccl_hook_log_;
    context.config.nccl_hook.sysfs_root = std::string(KUBE_RDMA_FIXTURES) + "/" + node + "/sys";
    auto prepared = renderClaim(claim, ClaimRef{"ml", "train-0-rdma-x7k2p", uid},
                                discoverFixture(node), context);
    EXPECT_TRUE(prepared.ok()) << prepared.error().message;
    if (!prepared.ok()) {
      return "";
    }
    std::filesystem::create_directories(context.state_dir);
    writeTestFile(prepared->files[0].path, prepared->files[0].content);
    nlohmann::json spec = nlohmann::json::parse(prepared->files[1].content);
    sandbox_.pointDeviceNodes(spec);
    spec_path_ = prepared->files[1].path;
    std::filesystem::create_directories(PodmanSandbox::kCdiDir);
    std::ofstream(spec_path_) << spec.dump(2);
    return prepared->devices.at(0).cdi_device_ids.at(0);
  }

  PodmanSandbox sandbox_;
  const std::string nccl_hook_log_ = sandbox_.dir().path() + "/nccl-hook.log";
  std::string spec_path_;
};

TEST_F(PodmanRuncDra, TheClaimGetsItsDevicesAndNcclConfAndThePodsNcclValuesWin) {
  const std::string device = prepareTwoNicClaim();
  ASSERT_FALSE(device.empty());
  const ShellResult r = sandbox_.run(
      device, "NCCL_IB_HCA=mine",
      "echo ==env; env; echo ==conf; cat /etc/nccl.conf; echo ==dev; ls /dev/infiniband; "
      "echo ==limits; cat /proc/1/limits");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string env = r.output.substr(0, r.output.find("==conf"));
  const std::string conf = r.output.substr(r.output.find("==conf"));
  EXPECT_NE(env.find("\nKUBE_RDMA_CDI=1\n"), std::string::npos) << r.output;
  EXPECT_NE(env.find("\nKUBE_RDMA_DEVICES=mlx5_1,mlx5_2\n"), std::string::npos) << r.output;
  EXPECT_NE(env.find("\nKUBE_RDMA_CLAIM=ml/train-0-rdma-x7k2p\n"), std::string::npos) << r.output;
  // The pod's own value, not the node's: the CDI spec carries no NCCL_* variable.
  EXPECT_NE(env.find("\nNCCL_IB_HCA=mine\n"), std::string::npos) << r.output;
  EXPECT_EQ(env.find("\nNCCL_IB_GID_INDEX="), std::string::npos) << r.output;
  EXPECT_NE(conf.find("\nNCCL_IB_HCA==mlx5_1:1,mlx5_2:1\n"), std::string::npos) << r.output;
  EXPECT_NE(conf.find("\nNCCL_IB_GID_INDEX=3\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rdma_cm\nuverbs1\n"), std::string::npos) << r.output;
  // The claim asks for 16 GiB; without CAP_SYS_RESOURCE the soft limit can only reach the hard.
  EXPECT_EQ(memlockOf(r.output),
            haveCapSysResource() ? "17179869184 17179869184" : "8388608 8388608")
      << r.output;
}

// One claim, shared by two pods (a claim is how pods share NICs): each pod's container is in its
// own network namespace and reads its own GID index, resolved at its creation by the spec's
// kube-rdma-nccl-hook, from the one nccl.conf the driver prepared for the claim.
TEST_F(PodmanRuncDra, TwoPodsSharingAClaimEachGetTheirOwnGidIndex) {
  nlohmann::json claim = nlohmann::json::parse(readTestData("claim-two-nics.json"));
  auto& results = claim["status"]["allocation"]["devices"]["results"];
  results = nlohmann::json::array({results[0], results[1]});
  results[1]["device"] = "pci-0000-3b-00-0-p1"; // mlx5_1 of the roce-pod-network fixture
  claim["status"]["allocation"]["devices"]["config"].erase(1); // no GPU driver config needed
  const std::string device = prepareClaim(claim, "roce-pod-network");
  ASSERT_FALSE(device.empty());
  PodNetns pod_a("krdma-dra-poda", {"198.51.100.31/24"});
  PodNetns pod_b("krdma-dra-podb", {"198.51.100.32/24"});
  ASSERT_TRUE(pod_a.ok() && pod_b.ok()) << "ip netns failed";
  const ShellResult a = sandbox_.run(device, "", "cat /etc/nccl.conf", pod_a.podmanNetwork());
  const ShellResult b = sandbox_.run(device, "", "cat /etc/nccl.conf", pod_b.podmanNetwork());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  // The node's rule gives the host's 3; podA's own GID on mlx5_1 is 7, podB's 9.
  EXPECT_NE(a.output.find("NCCL_IB_HCA==mlx5_1:1\nNCCL_IB_DISABLE=0\nNCCL_IB_GID_INDEX=7\n"),
            std::string::npos)
      << a.output << readTestFile(nccl_hook_log_);
  EXPECT_NE(b.output.find("NCCL_IB_HCA==mlx5_1:1\nNCCL_IB_DISABLE=0\nNCCL_IB_GID_INDEX=9\n"),
            std::string::npos)
      << b.output << readTestFile(nccl_hook_log_);
}

} // namespace
} // namespace kube_rdma
