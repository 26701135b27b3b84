// The memlock hook under a real OCI runtime: podman with runc applies the plugin's CDI spec
// (cdiSpecJson) to a container on a busybox root filesystem, started under a runtime
// RLIMIT_MEMLOCK of 64 KiB soft / 8 MiB hard, and the container reads its own /proc/1/limits.
//
// Podman 4.3 (Debian 12) reads CDI specs only from /etc/cdi and /var/run/cdi, so the spec goes to
// /var/run/cdi under a kind of this test process's own and is removed afterwards. This host has no
// /dev/infiniband: each device node of the spec gets a hostPath to a char device made with mknod
// in a temp dir, with the fixture's major:minor.
//
// The runtime's limit comes from prlimit around podman, not from --ulimit memlock: podman would
// put that into the OCI spec's rlimits, which runc applies after every hook stage (the case of
// CRI-O's default_ulimits, docs/memlock.md). nofile and nproc are set low because podman's
// defaults (1048576) are above what root without CAP_SYS_RESOURCE may set.

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "plugin/cdi_spec.h"
#include "plugin/pool_resource_manager.h"
#include "test/memlock/memlock_test_support.h"
#include "test/plugin/temp_dir.h"

namespace kube_rdma {
namespace {

constexpr const char* kCdiDir = "/var/run/cdi";

class PodmanRunc : public testing::Test {
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
    pool_ = a100SharedPool();
    pool_.spec.resource_name = "rdma/memlock-test-" + std::to_string(getpid());
    spec_path_ = cdiSpecPath(kCdiDir, pool_.spec.resource_name);
    makeRootfs();
    const ShellResult probe = podman("", "true");
    if (probe.exit_code != 0) {
      GTEST_SKIP() << "podman --runtime runc cannot run a container here: " << probe.output;
    }
  }
  void TearDown() override {
    if (!spec_path_.empty()) {
      std::filesystem::remove(spec_path_);
    }
  }

  void makeRootfs() {
    const std::string bin = tmp_.sub("rootfs/bin");
    std::filesystem::copy_file(runShell("command -v busybox | tr -d '\\n'").output,
                               bin + "/busybox");
    for (const char* applet : {"sh", "cat", "ls"}) {
      std::filesystem::create_symlink("busybox", bin + "/" + applet);
    }
  }

  // A char device at tmp/dev/... for `container_path`, numbered like the fixture's node.
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

  // The plugin's spec for the pool with `limit`, its device nodes pointed at mknod-made ones.
  void writeSpec(const MemlockLimit& limit) {
    MemlockHookConfig memlock;
    memlock.limit = limit;
    memlock.hook_path = MEMLOCK_HOOK_BINARY;
    memlock.log_file = log_;
    auto spec = nlohmann::json::parse(cdiSpecJson(pool_, a100Topology(), memlock));
    auto point = [&](nlohmann::json& edits) {
      for (auto& node : edits["deviceNodes"]) {
        node["hostPath"] = makeDeviceNode(node["path"]);
      }
    };
    for (auto& device : spec["devices"]) {
      point(device["containerEdits"]);
    }
    point(spec["containerEdits"]);
    std::filesystem::create_directories(kCdiDir);
    std::ofstream(spec_path_) << spec.dump(2);
  }

  // Runs `script` (no single quotes) in a container started under a 64 KiB / 8 MiB memlock
  // limit, given the CDI `device` when not empty.
  ShellResult podman(const std::string& device, const std::string& script) {
    return runShell(
        std::string("prlimit --memlock=65536:8388608 podman run --rm --runtime runc --network none"
                    " --ulimit nofile=1024:1024 --ulimit nproc=1024:1024") +
        (device.empty() ? "" : " --device " + device) + " --rootfs " + tmp_.path() +
        "/rootfs /bin/sh -c '" + script + "' 2>&1");
  }

  // The container's own limit and what it sees of the CDI spec.
  ShellResult runWithMlx5_1() {
    return podman(cdiKind(pool_.spec.resource_name) + "=mlx5_1",
                  "cat /proc/1/limits; echo KUBE_RDMA_CDI=$KUBE_RDMA_CDI; ls /dev/infiniband");
  }

  TempDir tmp_;
  const std::string log_ = tmp_.path() + "/memlock-hook.log";
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
