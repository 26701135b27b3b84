#pragma once

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "test/memlock/memlock_test_support.h"
#include "test/plugin/temp_dir.h"

namespace kube_rdma {

// Containers run by rootful podman with runc on a busybox root filesystem, for the tests that
// apply our CDI specs with a real OCI runtime (the plugin's in test/memlock, the DRA driver's in
// test/dra). Podman 4.3 (Debian 12) reads CDI specs only from /etc/cdi and /var/run/cdi. This
// host has no /dev/infiniband: pointDeviceNodes() gives each device node of a spec a hostPath to a
// char device made with mknod in the sandbox, with the A100 fixture's major:minor.
//
// The runtime's memlock limit comes from prlimit around podman, not from --ulimit memlock: podman
// would put that into the OCI spec's rlimits, which runc applies after every hook stage (the case
// of CRI-O's default_ulimits, docs/memlock.md). nofile and nproc are set low because podman's
// defaults (1048576) are above what root without CAP_SYS_RESOURCE may set.
class PodmanSandbox {
public:
  static constexpr const char* kCdiDir = "/var/run/cdi";

  // "" when containers can run here; else why not, for GTEST_SKIP.
  std::string unavailableReason() {
    if (getuid() != 0) {
      return "needs root: rootful podman reads /var/run/cdi, and mknod";
    }
    for (const char* tool : {"podman", "runc", "prlimit", "busybox"}) {
      if (runShell(std::string("command -v ") + tool + " >/dev/null").exit_code != 0) {
        return std::string(tool) + " not found (Debian: podman runc util-linux busybox-static)";
      }
    }
    const std::string bin = tmp_.sub("rootfs/bin");
    std::filesystem::copy_file(runShell("command -v busybox | tr -d '\\n'").output,
                               bin + "/busybox");
    for (const char* applet : {"sh", "cat", "ls", "env"}) {
      std::filesystem::create_symlink("busybox", bin + "/" + applet);
    }
    tmp_.sub("rootfs/etc"); // a mount point for files such as nccl.conf
    const ShellResult probe = run("", "", "true");
    if (probe.exit_code != 0) {
      return "podman --runtime runc cannot run a container here: " + probe.output;
    }
    return "";
  }

  // Points every deviceNodes entry of a CDI spec (devices and spec level) at a sandbox node.
  void pointDeviceNodes(nlohmann::json& spec) {
    auto point = [&](nlohmann::json& edits) {
      for (auto& node : edits["deviceNodes"]) {
        node["hostPath"] = makeDeviceNode(node["path"]);
      }
    };
    for (auto& device : spec["devices"]) {
      point(device["containerEdits"]);
    }
    point(spec["containerEdits"]);
  }

  // Runs `script` (no single quotes) in a container started under a 64 KiB / 8 MiB memlock
  // limit, given the CDI `device` and the container variable `env` (NAME=VALUE) when not empty,
  // with podman's `network` ("none", "host", "ns:/var/run/netns/NAME") and `options` added.
  ShellResult run(const std::string& device, const std::string& env, const std::string& script,
                  const std::string& network = "none", const std::string& options = "") {
    return runShell("prlimit --memlock=65536:8388608 podman run --rm --runtime runc --network " +
                    network + " --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 " + options +
                    (device.empty() ? "" : " --device " + device) +
                    (env.empty() ? "" : " --env " + env) + " --rootfs " + tmp_.path() +
                    "/rootfs /bin/sh -c '" + script + "' 2>&1");
  }

  const TempDir& dir() const { return tmp_; }

private:
  // A char device for `container_path`, numbered like the fixture's node.
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

  TempDir tmp_;
};

// A network namespace standing in for a pod's after CNI: lo and "net1", a macvlan as Multus names
// it (on one end of a veth pair here, since the kernels we run on may lack the dummy driver), with
// `addresses` ("198.51.100.31/24"), deleted at scope exit. Podman joins it with
// --network podmanNetwork().
class PodNetns {
public:
  PodNetns(const std::string& name, const std::vector<std::string>& addresses)
      : name_(name + "-" + std::to_string(getpid())) {
    std::string script = "ip netns add " + name_ + " && ip -n " + name_ +
                         " link set lo up && ip -n " + name_ +
                         " link add lower0 type veth peer name lower1 && ip -n " + name_ +
                         " link set lower0 up && ip -n " + name_ +
                         " link add link lower0 name net1 type macvlan mode bridge && ip -n " +
                         name_ + " link set net1 up";
    for (const auto& address : addresses) {
      script += " && ip -n " + name_ + " addr add " + address + " dev net1";
    }
    ok_ = runShell(script + " 2>&1").exit_code == 0;
  }
  ~PodNetns() { runShell("ip netns del " + name_ + " 2>/dev/null"); }
  PodNetns(const PodNetns&) = delete;
  PodNetns& operator=(const PodNetns&) = delete;

  bool ok() const { return ok_; }
  std::string podmanNetwork() const { return "ns:/var/run/netns/" + name_; }

private:
  std::string name_;
  bool ok_ = false;
};

} // namespace kube_rdma
