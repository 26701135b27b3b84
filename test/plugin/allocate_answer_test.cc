// PoolResourceManager's Allocate answers follow the last health update and the granted HCAs, and
// an answer's nccl.conf is written again when the file went missing.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/pools/plugin_config.h"
#include "common/pools/pools.h"
#include "common/node/sysfs_discovery.h"
#include "plugin/health_watcher.h"
#include "plugin/pool_resource_manager.h"
#include "test/plugin/temp_dir.h"
#include "test/plugin/test_files.h"

namespace kube_rdma {
namespace {

namespace fs = std::filesystem;

// The benchmark's two pools (test/plugin/plugin_bench.cc).
constexpr const char* kConfig = R"({"version": "v1", "pools": [
  {"resourceName": "example.com/hca", "mode": "exclusive",
   "selector": {"deviceNames": ["mlx5_[1-4]"]}},
  {"resourceName": "example.com/shared", "selector": {"deviceNames": ["mlx5_[5-8]"]}}]})";

class AllocateAnswerTest : public ::testing::Test {
protected:
  void SetUp() override {
    topology_ =
        std::make_shared<const NodeTopology>(discoverFromSysfs({node_ + "/sys", node_ + "/proc"}));
    auto config = parsePluginConfig(kConfig);
    ASSERT_TRUE(config.ok()) << config.error().message;
    pools_ = buildPools(*topology_, *config);
    ASSERT_EQ(pools_.size(), 2u);
  }

  const NodePool& pool(const std::string& resource) const {
    return pools_[pools_[0].spec.resource_name == resource ? 0 : 1];
  }
  // The node as generated, or with `missing`'s /dev/infiniband/uverbsN gone (then unusable).
  NodeHealthView health(const std::string& missing = "") const {
    NodeHealthView view = sampleNodeHealth(*topology_, node_ + "/sys", node_ + "/dev");
    if (!missing.empty()) {
      view.uverbs_present.erase(topology_->findDevice(missing)->uverbs);
    }
    return view;
  }
  std::string pciAddress(const std::string& device) const {
    return topology_->findDevice(device)->pci_address;
  }

  const std::string node_ = std::string(KUBE_RDMA_FIXTURES) + "/a100-roce";
  TempDir dir_;
  std::shared_ptr<const NodeTopology> topology_;
  std::vector<NodePool> pools_;
};

// An env value of an answer, "" when it has none.
std::string env(const ContainerAllocation& allocation, const std::string& wanted) {
  for (const auto& [name, value] : allocation.envs) {
    if (name == wanted) {
      return value;
    }
  }
  return "";
}

std::vector<std::string> hostPaths(const ContainerAllocation& allocation) {
  std::vector<std::string> paths;
  for (const auto& device : allocation.devices) {
    paths.push_back(device.host_path);
  }
  return paths;
}

TEST_F(AllocateAnswerTest, AnAnswerWritesItsNcclConfAgainWhenTheFileWentMissing) {
  StateWriter state(dir_.sub("state"));
  PoolResourceManager manager(pool("example.com/shared"), false, false, state);
  manager.update(health());
  auto first = manager.allocate({"0"});
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_EQ(first->mounts.size(), 1u);
  const std::string conf = first->mounts[0].host_path;
  const std::string content = readTestFile(conf);
  ASSERT_NE(content.find("NCCL_IB_HCA="), std::string::npos) << content;

  ASSERT_TRUE(fs::remove(conf));
  auto second = manager.allocate({"1"});
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(second->mounts[0].host_path, conf);
  EXPECT_EQ(readTestFile(conf), content);
  EXPECT_EQ(second->envs, first->envs);
}

TEST_F(AllocateAnswerTest, AHealthUpdateChangesTheAnswers) {
  StateWriter state(dir_.sub("state"));
  PoolResourceManager manager(pool("example.com/shared"), false, false, state);
  manager.update(health());
  auto before = manager.allocate({"0"});
  ASSERT_TRUE(before.ok()) << before.error().message;
  EXPECT_EQ(env(*before, "NCCL_IB_HCA"), "=mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_8:1");

  manager.update(
      health("mlx5_6")); // the list stays Healthy (other HCAs are usable), the answer not
  auto after = manager.allocate({"0"});
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_EQ(env(*after, "NCCL_IB_HCA"), "=mlx5_5:1,mlx5_7:1,mlx5_8:1");
  EXPECT_EQ(after->devices.size(), before->devices.size() - 1);
  EXPECT_NE(after->mounts[0].host_path, before->mounts[0].host_path);

  // The same HCAs granted, other settings: udev renamed a netdev under a working HCA.
  auto renamed = std::make_shared<NodeTopology>(*topology_);
  for (auto& device : renamed->devices) {
    if (device.name == "mlx5_7") {
      device.netdevs = {"rdma7"};
      for (auto& port : device.ports) {
        port.netdev = "rdma7";
      }
    }
  }
  NodeHealthView view = health();
  view.topology = renamed;
  manager.update(view);
  auto after_rename = manager.allocate({"0"});
  ASSERT_TRUE(after_rename.ok()) << after_rename.error().message;
  EXPECT_EQ(env(*after_rename, "NCCL_IB_HCA"), env(*before, "NCCL_IB_HCA"));
  EXPECT_NE(env(*after_rename, "KUBE_RDMA_NETDEVS").find("rdma7"), std::string::npos)
      << env(*after_rename, "KUBE_RDMA_NETDEVS");

  manager.update(health());
  auto again = manager.allocate({"0"});
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->envs, before->envs);
  EXPECT_EQ(hostPaths(*again), hostPaths(*before));
}

TEST_F(AllocateAnswerTest, ExclusiveAnswersFollowTheGrantedHcas) {
  StateWriter state(dir_.sub("state"));
  PoolResourceManager manager(pool("example.com/hca"), false, false, state);
  manager.update(health());
  const std::string one = pciAddress("mlx5_1"), two = pciAddress("mlx5_2");
  // Each asked twice, in between the others.
  for (int round = 0; round < 2; ++round) {
    auto a = manager.allocate({one});
    auto b = manager.allocate({two});
    auto both = manager.allocate({two, one});
    ASSERT_TRUE(a.ok() && b.ok() && both.ok());
    EXPECT_EQ(env(*a, "NCCL_IB_HCA"), "=mlx5_1:1");
    EXPECT_EQ(env(*b, "NCCL_IB_HCA"), "=mlx5_2:1");
    EXPECT_EQ(env(*both, "NCCL_IB_HCA"), "=mlx5_1:1,mlx5_2:1");
    EXPECT_EQ(hostPaths(*a).size() + 1, hostPaths(*both).size()); // + one uverbs node
  }
}

} // namespace
} // namespace kube_rdma
