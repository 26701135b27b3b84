// A claim's CDI spec under a real OCI runtime: podman with runc injects one device of the spec
// prepareClaim renders for the two-NIC claim into a busybox container. The container must get the
// uverbs and rdma_cm nodes, the KUBE_RDMA_* variables, the claim's nccl.conf at /etc/nccl.conf,
// the memlock hook's raised limit, and no NCCL_* variable: the pod's own NCCL_IB_HCA stays.
//
// As in test/memlock/runtime_test.cc: podman 4.3 reads CDI specs only from /etc/cdi and
// /var/run/cdi, so the spec goes to /var/run/cdi under a claim UID of this process's own and is
// removed afterwards; the device nodes' hostPaths point at mknod-made nodes in a temp dir.

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "test/dra/dra_test_support.h"
#include "test/memlock/memlock_test_support.h"

namespace kube_rdma {
namespace {

constexpr const char* kCdiDir = "/var/run/cdi";

class PodmanRuncDra : public testing::Test {
protected:
  void SetUp() override {
    if (getuid() != 0) {
      GTEST_SKIP() << "needs root: rootful podman reads /var/run/cdi, and mknod";
    }
    for (const char* tool : {"podman", "runc", "prlimit", "busybox"}) {
      if (runShell(std::string("command -v ") + tool + " >/dev/null").exit_code != 0) {
        GTEST_SKIP() << tool << " not found (Debian: podman runc util-linux busybox-static)";
      }
    }
    const std::string bin = tmp_.sub("rootfs/bin");
    std::filesystem::copy_file(runShell("command -v busybox | tr -d '\\n'").output,
                               bin + "/busybox");
    for (const char* applet : {"sh", "cat", "ls", "env"}) {
      std::filesystem::create_symlink("busybox", bin + "/" + applet);
    }
    tmp_.sub("rootfs/etc"); // the mount point of nccl.conf
    const ShellResult probe = podman("", "", "true");
    if (probe.exit_code != 0) {
      GTEST_SKIP() << "podman --runtime runc cannot run a container here: " << probe.output;
    }
  }
  void TearDown() override {
    if (!spec_path_.empty()) {
      std::filesystem::remove(spec_path_);
    }
  }

  // A char device in the temp dir with the numbers of the fixture's node for `container_path`.
  std::string makeDeviceNode(const std::string& container_path) {
    const std::string name = std::filesystem::path(container_path).filename();
    std::string numbers = "10:58"; // rdma_cm, a misc device; the fixture's sysfs has no entry
    if (name != "rdma_cm") {
      numbers = readTestFile(kA100 + "/sys/class/infiniband_verbs/" + name + "/dev");
    }
    const std::string host_path = tmp_.path() + "/dev" + container_path;
    std::filesystem::create_directories(std::filesystem::path(host_path).parent_path());
    const unsigned major = std::stoul(numbers);
    const unsigned minor = std::stoul(numbers.substr(numbers.find(':') + 1));
    EXPECT_EQ(mknod(host_path.c_str(), S_IFCHR | 0666, makedev(major, minor)), 0) << host_path;
    return host_path;
  }

  // Prepares the two-NIC claim under a UID of this process and writes its files, the spec into
  // /var/run/cdi with its device nodes pointed at mknod-made ones. Returns the CDI ID of the
  // claim's first device.
  std::string prepareTwoNicClaim() {
    char uid[40];
    std::snprintf(uid, sizeof uid, "3f1c9a2e-8d4b-4a6f-9c1e-%012x",
                  static_cast<unsigned>(getpid()));
    nlohmann::json claim = nlohmann::json::parse(readTestData("claim-two-nics.json"));
    claim["metadata"]["uid"] = uid;
    PrepareContext context = testContext(tmp_.path());
    context.cdi_dir = kCdiDir;
    context.config.memlock.hook_path = MEMLOCK_HOOK_BINARY;
    context.config.memlock.log_file = tmp_.path() + "/memlock-hook.log";
    auto prepared = prepareClaim(claim, ClaimRef{"ml", "train-0-rdma-x7k2p", uid},
                                 discoverFixture("a100-roce"), context);
    EXPECT_TRUE(prepared.ok()) << prepared.error().message;
    if (!prepared.ok()) {
      return "";
    }
    std::filesystem::create_directories(context.state_dir);
    writeTestFile(prepared->files[0].path, prepared->files[0].content);
    nlohmann::json spec = nlohmann::json::parse(prepared->files[1].content);
    auto point = [&](nlohmann::json& edits) {
      for (auto& node : edits["deviceNodes"]) {
        node["hostPath"] = makeDeviceNode(node["path"]);
      }
    };
    for (auto& device : spec["devices"]) {
      point(device["containerEdits"]);
    }
    point(spec["containerEdits"]);
    spec_path_ = prepared->files[1].path;
    std::filesystem::create_directories(kCdiDir);
    std::ofstream(spec_path_) << spec.dump(2);
    return prepared->devices.at(0).cdi_device_ids.at(0);
  }

  // Runs `script` (no single quotes) in a container started under a 64 KiB / 8 MiB memlock
  // limit, with the CDI `device` when not empty and the pod-spec-like `env` (NAME=VALUE).
  ShellResult podman(const std::string& device, const std::string& env, const std::string& script) {
    return runShell(
        std::string("prlimit --memlock=65536:8388608 podman run --rm --runtime runc --network none"
                    " --ulimit nofile=1024:1024 --ulimit nproc=1024:1024") +
        (device.empty() ? "" : " --device " + device) + (env.empty() ? "" : " --env " + env) +
        " --rootfs " + tmp_.path() + "/rootfs /bin/sh -c '" + script + "' 2>&1");
  }

  TempDir tmp_;
  std::string spec_path_;
};

TEST_F(PodmanRuncDra, TheClaimGetsItsDevicesAndNcclConfAndThePodsNcclValuesWin) {
  const std::string device = prepareTwoNicClaim();
  ASSERT_FALSE(device.empty());
  const ShellResult r =
      podman(device, "NCCL_IB_HCA=mine",
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

} // namespace
} // namespace kube_rdma
