// kube-rdma-nccl-hook as a runtime runs it at createContainer: the OCI state on stdin, a bundle
// whose config.json names the node's nccl.conf bind-mounted read-only over the container's
// /etc/nccl.conf, in a mount and a network namespace of its own (unshare -m -n, so nothing reaches
// the host's) holding a macvlan (or, for a pod on the cluster network alone, only a veth), the GID
// tables of the roce-pod-network fixture and a pod's namespace addresses from the fixture's
// pods/<pod>/proc. The container's file is read back in the same namespace. Skips without root,
// unshare or the kernel's macvlan.

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "test/memlock/memlock_test_support.h"
#include "test/plugin/temp_dir.h"
#include "test/plugin/test_files.h"

namespace kube_rdma {
namespace {

const std::string kFixture = std::string(KUBE_RDMA_FIXTURES) + "/roce-pod-network";
// The interfaces of the container's namespace: a pod on a macvlan secondary network, or on the
// cluster network's veth alone.
constexpr const char* kMacvlan = "ip link add veth0 type veth peer name veth1 && "
                                 "ip link add link veth0 name net1 type macvlan mode bridge";
constexpr const char* kVethOnly = "ip link add eth0 type veth peer name veth1";
// What the device plugin writes for a container granted mlx5_1 and mlx5_2 (host rule: index 3).
constexpr const char* kNodeConf = "NCCL_IB_HCA==mlx5_1:1,mlx5_2:1\n"
                                  "NCCL_IB_DISABLE=0\n"
                                  "NCCL_IB_GID_INDEX=3\n"
                                  "NCCL_SOCKET_IFNAME==eth0\n";

struct Bundle {
  bool own_network = true;
  std::vector<std::string> env = {"PATH=/usr/bin:/bin"};
  bool mount_conf = true; // the runtime mounted the node's nccl.conf there
};

Bundle hostNetwork() {
  Bundle b;
  b.own_network = false;
  return b;
}

Bundle withEnv(std::string variable) {
  Bundle b;
  b.env.push_back(std::move(variable));
  return b;
}

Bundle withoutConfMount() {
  Bundle b;
  b.mount_conf = false;
  return b;
}

class NcclHookBinary : public testing::Test {
protected:
  void SetUp() override {
    if (geteuid() != 0) {
      GTEST_SKIP() << "needs root for a mount namespace (unshare -m)";
    }
    if (runShell("unshare -m -n sh -c '" + std::string(kMacvlan) + "' 2>/dev/null").exit_code !=
        0) {
      GTEST_SKIP() << "unshare -m -n or a macvlan does not work here";
    }
    std::filesystem::create_directories(state_dir_);
    std::filesystem::create_directories(rootfs_ + "/etc");
    writeTestFile(rootfs_ + "/etc/nccl.conf", "the image's own\n");
  }

  void writeBundle(const Bundle& b, const std::string& node_conf = kNodeConf) {
    writeTestFile(conf_, node_conf);
    nlohmann::json namespaces = nlohmann::json::array({{{"type", "pid"}}, {{"type", "mount"}}});
    if (b.own_network) {
      namespaces.push_back({{"type", "network"}, {"path", "/var/run/netns/cni-1"}});
    }
    nlohmann::json mounts =
        nlohmann::json::array({{{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}}});
    if (b.mount_conf) {
      mounts.push_back({{"destination", "/etc/nccl.conf"},
                        {"type", "bind"},
                        {"source", conf_},
                        {"options", {"ro", "nosuid", "nodev", "bind"}}});
    }
    const nlohmann::json config = {{"ociVersion", "1.1.0"},
                                   {"root", {{"path", "rootfs"}}},
                                   {"process", {{"env", b.env}, {"args", {"sh"}}}},
                                   {"mounts", mounts},
                                   {"linux", {{"namespaces", namespaces}}},
                                   {"annotations",
                                    {{"io.kubernetes.cri.sandbox-namespace", "training"},
                                     {"io.kubernetes.cri.sandbox-name", "worker-0"}}}};
    writeTestFile(bundle_ + "/config.json", config.dump());
    mount_conf_ = b.mount_conf;
  }

  // Runs the hook as `pod` (its namespace's addresses) and returns the container's nccl.conf as
  // the container would see it.
  ShellResult run(const std::string& pod, const std::string& extra = "",
                  const char* links = kMacvlan) {
    writeTestFile(tmp_.path() + "/state.json", R"({"ociVersion":"1.1.0","id":"ctr-)" + pod +
                                                   R"(","status":"creating","pid":1,"bundle":")" +
                                                   bundle_ + "\"}");
    const std::string target = rootfs_ + "/etc/nccl.conf";
    std::string script = std::string(links) + " && ";
    if (mount_conf_) {
      script += "mount --bind " + conf_ + " " + target + " && mount -o remount,bind,ro " + target +
                " && ";
    }
    script += hook_wrapper_ + NCCL_HOOK_BINARY + " --sysfs-root=" + kFixture +
              "/sys --proc-root=" + kFixture + "/pods/" + pod + "/proc --log-file=" + log_ + " " +
              extra + " < " + tmp_.path() + "/state.json 2>/dev/null; echo \"exit $?\"; cat " +
              target + "; touch " + target + " 2>/dev/null && echo WRITABLE";
    return runShell("unshare -m -n --propagation private sh -c '" + script + "'");
  }
  std::string log() const { return readTestFile(log_); }
  // Files the hook left beside the node's nccl.conf (it must leave none).
  size_t stateFiles() const {
    return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(state_dir_),
                                             std::filesystem::directory_iterator()));
  }

  TempDir tmp_;
  const std::string state_dir_ = tmp_.path() + "/state";
  const std::string conf_ = state_dir_ + "/nccl-0123abcd.conf";
  const std::string bundle_ = tmp_.path() + "/bundle";
  const std::string rootfs_ = bundle_ + "/rootfs";
  const std::string log_ = tmp_.path() + "/nccl-hook.log";
  bool mount_conf_ = true;
  std::string hook_wrapper_; // a command that runs the hook's, in front of it
};

std::string withIndex(const std::string& index) {
  return "exit 0\nNCCL_IB_HCA==mlx5_1:1,mlx5_2:1\nNCCL_IB_DISABLE=0\nNCCL_IB_GID_INDEX=" + index +
         "\nNCCL_SOCKET_IFNAME==eth0\n";
}

TEST_F(NcclHookBinary, APodOnAMacvlanNetworkGetsItsOwnGidIndexReadOnly) {
  writeBundle({});
  const ShellResult r = run("podA");
  // podA's own GIDs are index 7 on both ports; the host's (3) and podB's (9, 11) are not its.
  EXPECT_EQ(r.output, withIndex("7")) << log();
  EXPECT_NE(log().find("\"the container's own GID index\" pod=training/worker-0 container=ctr-podA "
                       "gid_index=7 ports=\"mlx5_1:1=7,mlx5_2:1=7\""),
            std::string::npos)
      << log();
  EXPECT_EQ(readTestFile(conf_), kNodeConf); // the node's file, shared by other containers
  EXPECT_EQ(stateFiles(), 1u);
}

TEST_F(NcclHookBinary, TheIndexIsAddedWhereTheHostHadNone) {
  // mlx5_3 has no host address: the node's rule gave no index; podA's own is 3.
  writeBundle({}, "NCCL_IB_HCA==mlx5_3:1\nNCCL_IB_DISABLE=0\nNCCL_SOCKET_IFNAME==eth0\n");
  EXPECT_EQ(run("podA").output, "exit 0\nNCCL_IB_HCA==mlx5_3:1\nNCCL_IB_DISABLE=0\n"
                                "NCCL_IB_GID_INDEX=3\nNCCL_SOCKET_IFNAME==eth0\n")
      << log();
  writeBundle({}, "NCCL_IB_HCA==mlx5_3:1\nNCCL_IB_DISABLE=0\nNCCL_SOCKET_IFNAME==eth0\n");
  EXPECT_EQ(run("podB").output, "exit 0\nNCCL_IB_HCA==mlx5_3:1\nNCCL_IB_DISABLE=0\n"
                                "NCCL_IB_GID_INDEX=5\nNCCL_SOCKET_IFNAME==eth0\n")
      << log();
}

TEST_F(NcclHookBinary, PortsThatDisagreeKeepTheNodesSettingsAndSaySo) {
  writeBundle({});
  // podB's own GIDs: 9 on mlx5_1, 11 on mlx5_2 (a freed slot pair below it on mlx5_2).
  EXPECT_EQ(run("podB").output, withIndex("3")) << log();
  EXPECT_NE(log().find("warn \"no single GID index of the container's namespace: the node's NCCL "
                       "settings stay\" pod=training/worker-0 container=ctr-podB "
                       "outcome=ports-disagree "
                       "ports=\"mlx5_1:1=9,mlx5_2:1=11\""),
            std::string::npos)
      << log();
}

TEST_F(NcclHookBinary, AVethOnlyPodKeepsTheHostsIndexWithoutReadingATable) {
  writeBundle({});
  // Its interfaces say it at once: loopback and a veth hold no GID.
  EXPECT_EQ(run("podbridge", "", kVethOnly).output, withIndex("3")) << log();
  EXPECT_NE(log().find("only loopback and veth interfaces, no GID of the container's own: the "
                       "node's NCCL settings stay\" pod=training/worker-0 container=ctr-podbridge "
                       "outcome=no-own-gid"),
            std::string::npos)
      << log();
  // Even where its interfaces do not say so, its addresses are in no table.
  EXPECT_EQ(run("podbridge").output, withIndex("3")) << log();
  EXPECT_NE(log().find("outcome=no-own-gid ports=\"mlx5_1:1=none,mlx5_2:1=none\""),
            std::string::npos)
      << log();
}

TEST_F(NcclHookBinary, RunsInAPidNamespaceUnderAnothersProc) {
  // As runc runs a createContainer hook: in the container's new PID namespace (b) while /proc is
  // still the host's (here a): the hook is pid 4 of b, and pid 4 of a exited long ago. Its
  // environment carries no ASAN_OPTIONS, as runc's carries none.
  writeTestFile(tmp_.path() + "/pidns-a.sh",
                "mount -t proc proc /proc && for i in 1 2 3 4 5 6 7 8; do /bin/true; done && "
                "exec unshare -p -f sh " +
                    tmp_.path() + "/pidns-b.sh \"$@\"\n");
  writeTestFile(tmp_.path() + "/pidns-b.sh", "/bin/true; /bin/true; unset ASAN_OPTIONS; \"$@\"\n");
  hook_wrapper_ = "unshare -p -f sh " + tmp_.path() + "/pidns-a.sh ";
  writeBundle({});
  EXPECT_EQ(run("podA").output, withIndex("7")) << log();
}

TEST_F(NcclHookBinary, HostNetworkAndAUserSetIndexAreLeftAlone) {
  writeBundle(hostNetwork());
  EXPECT_EQ(run("podA").output, withIndex("3"));
  EXPECT_NE(log().find("host network: the node's NCCL settings are the container's"),
            std::string::npos)
      << log();
  writeBundle(withEnv("NCCL_IB_GID_INDEX=5"));
  EXPECT_EQ(run("podA").output, withIndex("3"));
  EXPECT_NE(log().find("NCCL_IB_GID_INDEX is set in the container's environment"),
            std::string::npos)
      << log();
}

TEST_F(NcclHookBinary, NeverWritesOverAFileThatIsNotTheNodes) {
  // No mount at /etc/nccl.conf: the image's own file stays.
  writeBundle(withoutConfMount());
  EXPECT_EQ(run("podA").output, "exit 0\nthe image's own\nWRITABLE\n");
  EXPECT_NE(log().find("the container has no nccl.conf mount"), std::string::npos) << log();
}

TEST_F(NcclHookBinary, ASymlinkInTheImagesPathIsNotFollowed) {
  writeBundle({});
  std::filesystem::remove_all(rootfs_ + "/etc");
  std::filesystem::create_directories(rootfs_ + "/real-etc");
  writeTestFile(rootfs_ + "/real-etc/nccl.conf", "");
  std::filesystem::create_symlink("real-etc", rootfs_ + "/etc");
  const ShellResult r = run("podA");
  EXPECT_EQ(r.output.rfind("exit 0\n", 0), 0u) << r.output;
  EXPECT_EQ(r.output.find("NCCL_IB_GID_INDEX=7"), std::string::npos) << r.output;
  EXPECT_NE(log().find("/etc in the container is a symbolic link, not followed"), std::string::npos)
      << log();
  EXPECT_EQ(stateFiles(), 1u);
}

TEST_F(NcclHookBinary, BadInputIsLoggedAndTheContainerStarts) {
  writeBundle({});
  EXPECT_EQ(run("podA", "--addr-range=10.0.0.0").output, withIndex("3"));
  EXPECT_NE(log().find("bad argument, nccl.conf left as the node wrote it"), std::string::npos);
  writeTestFile(bundle_ + "/config.json", "{\"root\": 7}");
  EXPECT_EQ(run("podA").output, withIndex("3"));
  EXPECT_NE(log().find("bad OCI spec"), std::string::npos) << log();
  writeBundle({}, "NCCL_IB_HCA==mlx5_9:1\n");
  EXPECT_EQ(run("podA").output, "exit 0\nNCCL_IB_HCA==mlx5_9:1\n");
  EXPECT_NE(log().find("NCCL_IB_HCA entry mlx5_9:1: no such RDMA device"), std::string::npos)
      << log();
}

TEST_F(NcclHookBinary, EveryRunIsCountedForTheDaemonsMetrics) {
  writeBundle({});
  run("podA");                     // own-gid-index
  run("podA");                     // own-gid-index
  run("podB");                     // ports-disagree
  run("podbridge", "", kVethOnly); // no-own-gid
  run("podA", "--addr-range=x");   // error: a bad argument
  writeBundle(hostNetwork());
  run("podA");
  writeBundle(withEnv("NCCL_IB_GID_INDEX=5"));
  run("podA");
  writeBundle(withoutConfMount());
  run("podA");
  EXPECT_EQ(readTestFile(log_ + ".counts"), "error 1\nhost-network 1\nno-nccl-conf 1\n"
                                            "no-own-gid 1\nown-gid-index 2\nports-disagree 1\n"
                                            "user-set 1\n")
      << log();
  // A counts file that is not one is started again, and the log says so.
  writeTestFile(log_ + ".counts", "own-gid-index many\n");
  writeBundle({});
  run("podA");
  EXPECT_EQ(readTestFile(log_ + ".counts"), "own-gid-index 1\n");
  EXPECT_NE(log().find("line 1 is not \\\"OUTCOME COUNT\\\": \\\"own-gid-index many\\\", counting "
                       "from 0 again"),
            std::string::npos)
      << log();
}

TEST_F(NcclHookBinary, AnAddressRangeOutsideThePodsLeavesTheNodesValue) {
  writeBundle({});
  EXPECT_EQ(run("podA", "--addr-range=198.51.100.0/24").output, withIndex("3")) << log();
  EXPECT_NE(log().find("outcome=no-own-gid ports=\"mlx5_1:1=7,mlx5_2:1=none\""), std::string::npos)
      << log();
}

} // namespace
} // namespace kube_rdma
