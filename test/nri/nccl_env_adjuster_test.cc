#include "nri/nccl_env_adjuster.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kube_rdma {
namespace {

namespace fs = std::filesystem;

const std::string kFixture = std::string(KUBE_RDMA_FIXTURES) + "/roce-pod-network";

// The host's /proc as the NRI plugin sees it: one sandbox process per fixture pod, each
// /proc/<pid>/net that pod's network namespace; the node's nccl.conf as the daemon wrote it.
class NcclEnvAdjusterTest : public ::testing::Test {
protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("nri-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "proc");
    for (const auto& [pid, pod] :
         {std::pair{"101", "podA"}, {"102", "podB"}, {"103", "podbridge"}}) {
      fs::create_directory_symlink(fs::path(kFixture) / "pods" / pod / "proc",
                                   root_ / "proc" / pid);
    }
    std::ofstream(root_ / "nccl.conf") << "NCCL_IB_HCA==mlx5_1:1,mlx5_2:1\nNCCL_IB_DISABLE=0\n"
                                          "NCCL_IB_GID_INDEX=3\nNCCL_SOCKET_IFNAME==eth0\n";
    options_ = {kFixture + "/sys", (root_ / "proc").string()};
  }
  void TearDown() override { fs::remove_all(root_); }

  // A container of pod training/worker-0 as containerd sends it: its CDI spec's hook, the
  // nccl.conf mount, a network namespace of its own, in the sandbox of `pid`.
  nriapi::CreateContainerRequest request(uint32_t pid) const {
    nriapi::CreateContainerRequest out;
    out.mutable_pod()->set_namespace_("training");
    out.mutable_pod()->set_name("worker-0");
    out.mutable_pod()->set_pid(pid);
    auto* container = out.mutable_container();
    container->set_id("c1");
    container->add_env("PATH=/usr/bin");
    auto* mount = container->add_mounts();
    mount->set_destination("/etc/nccl.conf");
    mount->set_source((root_ / "nccl.conf").string());
    auto* hook = container->mutable_hooks()->add_create_container();
    hook->set_path("/var/lib/kube-rdma/bin/kube-rdma-nccl-hook");
    hook->add_args("kube-rdma-nccl-hook");
    hook->add_args("--addr-family=AF_INET");
    container->mutable_linux()->add_namespaces()->set_type("network");
    return out;
  }

  fs::path root_;
  NcclEnvAdjusterOptions options_;
};

TEST_F(NcclEnvAdjusterTest, APodOnItsOwnNetworkGetsItsIndexInTheEnvironment) {
  const NcclEnvAdjustment adjusted = adjustNcclEnv(request(101), options_);
  ASSERT_TRUE(adjusted.carries_hook);
  EXPECT_EQ(adjusted.decision.outcome, NcclHookOutcome::kOwnGidIndex);
  ASSERT_EQ(adjusted.adjust.env_size(), 1);
  EXPECT_EQ(adjusted.adjust.env(0).key(), "NCCL_IB_GID_INDEX");
  EXPECT_EQ(adjusted.adjust.env(0).value(), "7");
  EXPECT_EQ(adjusted.adjust.annotations().at(kNriGidIndexAnnotation), "7");
  EXPECT_EQ(adjusted.decision.fields[0], (LogField{"pod", "training/worker-0"}));
}

TEST_F(NcclEnvAdjusterTest, NoSingleOwnIndexLeavesTheEnvironmentAlone) {
  for (const auto& [pid, outcome] :
       {std::pair{102U, NcclHookOutcome::kPortsDisagree}, {103U, NcclHookOutcome::kNoOwnGid}}) {
    const NcclEnvAdjustment adjusted = adjustNcclEnv(request(pid), options_);
    EXPECT_EQ(adjusted.decision.outcome, outcome) << pid;
    EXPECT_EQ(adjusted.adjust.ByteSizeLong(), 0u) << pid;
  }
}

TEST_F(NcclEnvAdjusterTest, WhatTheHookLeavesAloneSoDoesThePlugin) {
  auto host_network = request(101);
  host_network.mutable_container()->mutable_linux()->clear_namespaces();
  auto user_set = request(101);
  user_set.mutable_container()->add_env("NCCL_IB_GID_INDEX=5");
  auto no_conf = request(101);
  no_conf.mutable_container()->clear_mounts();
  // Another kube-rdma plugin came first (both daemons on the node for a moment): NRI fails the
  // container if a second plugin sets the variable too.
  auto set_before = request(101);
  set_before.mutable_container()->add_env("NCCL_IB_GID_INDEX=7");
  (*set_before.mutable_container()->mutable_annotations())[kNriGidIndexAnnotation] = "7";
  for (const auto& [name, req, outcome] :
       {std::tuple{"hostNetwork", host_network, NcclHookOutcome::kHostNetwork},
        {"the user's own value", user_set, NcclHookOutcome::kUserSet},
        {"another kube-rdma plugin's value", set_before, NcclHookOutcome::kUserSet},
        {"no nccl.conf", no_conf, NcclHookOutcome::kNoNcclConf}}) {
    const NcclEnvAdjustment adjusted = adjustNcclEnv(req, options_);
    EXPECT_EQ(adjusted.decision.outcome, outcome) << name;
    EXPECT_EQ(adjusted.adjust.ByteSizeLong(), 0u) << name;
  }
}

// In the kernel's exclusive RDMA netns mode the pod's own device is not in the host's sysfs, and
// the runtime has not mounted the container's yet: the environment is left to nccl.conf.
TEST_F(NcclEnvAdjusterTest, InExclusiveModeTheHookResolvesNotThePlugin) {
  fs::create_directories(root_ / "sys/module/ib_core/parameters");
  std::ofstream(root_ / "sys/module/ib_core/parameters/netns_mode") << "N\n";
  options_.sysfs_root = (root_ / "sys").string();
  const NcclEnvAdjustment adjusted = adjustNcclEnv(request(101), options_);
  EXPECT_EQ(adjusted.decision.outcome, NcclHookOutcome::kExclusiveNetns)
      << adjusted.decision.message;
  EXPECT_EQ(adjusted.decision.level, LogLevel::kInfo);
  EXPECT_EQ(adjusted.adjust.ByteSizeLong(), 0u);
  EXPECT_FALSE(podWarningOf(request(101), adjusted).has_value());
}

TEST_F(NcclEnvAdjusterTest, OnlyContainersCarryingTheHookAreKubeRdmas) {
  auto other = request(101);
  other.mutable_container()->mutable_hooks()->mutable_create_container(0)->set_path(
      "/usr/bin/not-kube-rdma-nccl-hook");
  EXPECT_FALSE(adjustNcclEnv(other, options_).carries_hook);
  EXPECT_FALSE(adjustNcclEnv(nriapi::CreateContainerRequest(), options_).carries_hook);
}

TEST_F(NcclEnvAdjusterTest, TroubleIsAnErrorOutcomeAndNoAdjustment) {
  auto bad_arg = request(101);
  bad_arg.mutable_container()->mutable_hooks()->mutable_create_container(0)->add_args(
      "--addr-range=10.0.0.0/99");
  auto no_pid = request(0);
  auto gone = request(999); // the sandbox ended between its network and this container
  for (const auto& [name, req, error] : {std::tuple{"bad argument", bad_arg, "--addr-range"},
                                         {"no pid", no_pid, ""},
                                         {"no such process", gone, "999/net/fib_trie"}}) {
    const NcclEnvAdjustment adjusted = adjustNcclEnv(req, options_);
    EXPECT_TRUE(adjusted.carries_hook) << name;
    EXPECT_EQ(adjusted.adjust.ByteSizeLong(), 0u) << name;
    std::ostringstream fields;
    for (const auto& [key, value] : adjusted.decision.fields) {
      fields << key << "=" << value << " ";
    }
    EXPECT_NE(fields.str().find(error), std::string::npos) << name << ": " << fields.str();
  }
}

TEST_F(NcclEnvAdjusterTest, PortsThatDisagreeAndErrorsAreWarningsOnThePod) {
  auto disagree = request(102);
  disagree.mutable_pod()->set_uid("pod-uid");
  disagree.mutable_container()->set_name("trainer");
  MetricsRegistry metrics;
  std::ostringstream sink;
  Logger log(sink);
  std::vector<PodWarning> warned;
  NcclEnvAdjuster adjuster(options_, metrics, log,
                           [&warned](const PodWarning& w) { warned.push_back(w); });
  adjuster(disagree);
  adjuster(request(101)); // its own index: nothing to warn about
  adjuster(request(103)); // no GID of its own (cluster network only): right as it is
  adjuster(request(999)); // the sandbox is gone
  ASSERT_EQ(warned.size(), 2u);
  EXPECT_EQ(warned[0].pod_namespace + "/" + warned[0].pod_name + " " + warned[0].pod_uid,
            "training/worker-0 pod-uid");
  EXPECT_EQ(warned[0].reason, "RdmaGidPortsDisagree");
  EXPECT_EQ(warned[0].message,
            "container trainer: its own RoCE GIDs sit at different indexes on its ports "
            "(mlx5_1:1=9,mlx5_2:1=11) and NCCL takes one index for all: it keeps the node's, not "
            "one of the pod's network; give every rail the same GID layout");
  EXPECT_EQ(warned[1].reason, "RdmaGidIndexUnresolved");
  EXPECT_NE(warned[1].message.find("cannot read the container's addresses"), std::string::npos)
      << warned[1].message;
  EXPECT_NE(warned[1].message.find("/999/net/fib_trie"), std::string::npos) << warned[1].message;
}

TEST_F(NcclEnvAdjusterTest, CountsEveryOutcomeFromZero) {
  MetricsRegistry metrics;
  std::ostringstream sink;
  Logger log(sink);
  NcclEnvAdjuster adjuster(options_, metrics, log);
  EXPECT_NE(metrics.render().find("kube_rdma_nri_containers_total{outcome=\"ports-disagree\"} 0"),
            std::string::npos);
  EXPECT_EQ(adjuster(request(101)).env(0).value(), "7");
  adjuster(nriapi::CreateContainerRequest()); // not kube-rdma's: neither counted nor logged
  EXPECT_NE(metrics.render().find("kube_rdma_nri_containers_total{outcome=\"own-gid-index\"} 1"),
            std::string::npos);
  const std::string logged = sink.str();
  EXPECT_NE(logged.find("NRI: the container's own GID index"), std::string::npos);
  EXPECT_EQ(std::count(logged.begin(), logged.end(), '\n'), 1);
}

} // namespace
} // namespace kube_rdma
