#include "plugin/pool_resource_manager.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/node/sysfs_discovery.h"
#include "plugin/health_watcher.h"
#include "test/plugin/temp_dir.h"

namespace kube_rdma {
namespace {

const std::string kA100 = std::string(KUBE_RDMA_FIXTURES) + "/a100-roce";

std::shared_ptr<const NodeTopology> a100() {
  static const auto topology =
      std::make_shared<const NodeTopology>(discoverFromSysfs({kA100 + "/sys", kA100 + "/proc"}));
  return topology;
}

NodePool pool(PoolMode mode) {
  PluginConfig config = defaultPluginConfig();
  for (auto& spec : config.pools) {
    spec.mode = mode;
  }
  for (auto& p : buildPools(*a100(), config)) {
    if (p.spec.resource_name == "rdma/shared") {
      return p;
    }
  }
  return {};
}

// The node as generated: every port ACTIVE, every uverbs node present.
NodeHealthView allWell() {
  return sampleNodeHealth(*a100(), kA100 + "/sys", kA100 + "/dev");
}

NodeHealthView withPortState(NodeHealthView view, const std::string& device, PortState state) {
  auto topology = std::make_shared<NodeTopology>(*view.topology);
  for (auto& d : topology->devices) {
    if (d.name == device) {
      d.ports[0].state = state;
    }
  }
  view.topology = topology;
  return view;
}

TEST(PoolDevices, SharedPoolIsHealthyWhileAnyHcaIsUsable) {
  const NodePool shared = pool(PoolMode::kShared);
  ASSERT_EQ(shared.hcas.size(), 8u); // mlx5_1..8; mlx5_0 carries the default route
  auto devices = poolDevices(shared, allWell());
  ASSERT_EQ(devices.size(), sharedDeviceCount(shared.spec, 8));
  EXPECT_EQ(devices.front().id, "0");
  EXPECT_TRUE(devices.front().healthy);
  EXPECT_FALSE(devices.front().numa_node);

  NodeHealthView view = allWell();
  for (int i = 1; i <= 7; ++i) {
    view = withPortState(view, "mlx5_" + std::to_string(i), PortState::kDown);
  }
  EXPECT_TRUE(poolDevices(shared, view).front().healthy);
  view.uverbs_present.erase(a100()->findDevice("mlx5_8")->uverbs);
  EXPECT_FALSE(poolDevices(shared, view).front().healthy);
}

TEST(PoolDevices, ExclusiveIdsArePciAddressesWithNumaAndOwnHealth) {
  const NodePool exclusive = pool(PoolMode::kExclusive);
  const auto view = withPortState(allWell(), "mlx5_5", PortState::kInit);
  const auto devices = poolDevices(exclusive, view);
  ASSERT_EQ(devices.size(), 8u);
  const RdmaDevice* mlx5_5 = a100()->findDevice("mlx5_5");
  for (const auto& d : devices) {
    const bool is_5 = d.id == mlx5_5->pci_address;
    EXPECT_EQ(d.healthy, !is_5) << d.id;
    if (is_5) {
      EXPECT_EQ(d.numa_node, mlx5_5->numa_node);
    }
  }
}

TEST(BuildAllocation, DeviceNodesThenRdmaCmMountAndCdiNames) {
  NodePool shared = pool(PoolMode::kShared);
  const NcclEnv env = {{"NCCL_IB_HCA", "=mlx5_2:1"}};
  auto answer = buildAllocation(shared, *a100(), {"mlx5_2"}, env, "/state/nccl-x.conf", true);
  ASSERT_EQ(answer.devices.size(), 2u);
  EXPECT_EQ(answer.devices[0].host_path, a100()->findDevice("mlx5_2")->uverbsDevicePath());
  EXPECT_EQ(answer.devices[1].host_path, "/dev/infiniband/rdma_cm");
  EXPECT_EQ(answer.devices[1].permissions, "rw");
  EXPECT_EQ(answer.envs, env);
  ASSERT_EQ(answer.mounts.size(), 1u);
  EXPECT_EQ(answer.mounts[0].container_path, "/etc/nccl.conf");
  EXPECT_EQ(answer.cdi_devices, std::vector<std::string>{"kube-rdma.io/rdma_shared=mlx5_2"});

  shared.spec.nccl.nccl_conf_enabled = false;
  EXPECT_TRUE(buildAllocation(shared, *a100(), {"mlx5_2"}, env, "", false).mounts.empty());
}

TEST(PoolResourceManager, RefusesUnknownAndUnhealthyIdsNamingThemAndForcesAResend) {
  TempDir dir;
  StateWriter state(dir.path());
  const NodePool exclusive = pool(PoolMode::kExclusive);
  PoolResourceManager manager(exclusive, false, false, state);
  manager.update(withPortState(allWell(), "mlx5_3", PortState::kDown));
  const uint64_t version = manager.devices().version;
  const std::string down = a100()->findDevice("mlx5_3")->pci_address;

  auto refused = manager.allocate({down, "0000:ff:00.0"});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("unknown device IDs [0000:ff:00.0]"), std::string::npos);
  EXPECT_NE(refused.error().message.find("unhealthy device IDs [" + down + "]"), std::string::npos);
  EXPECT_GT(manager.devices().version, version);

  const std::string up = a100()->findDevice("mlx5_4")->pci_address;
  auto granted = manager.allocate({up});
  ASSERT_TRUE(granted.ok()) << granted.error().message;
  ASSERT_EQ(granted->mounts.size(), 1u);
  EXPECT_EQ(std::filesystem::path(granted->mounts[0].host_path).parent_path(), dir.path());
  // Same settings, same content-addressed file.
  auto again = manager.allocate({up});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->mounts[0].host_path, granted->mounts[0].host_path);
}

TEST(StateWriter, NamesFilesAfterTheirContentAndLeavesNoTemporaries) {
  TempDir dir;
  StateWriter state(dir.path());
  ASSERT_TRUE(state.prepare().ok());
  auto a = state.writeNcclConf("NCCL_IB_HCA==mlx5_1:1\n");
  auto b = state.writeNcclConf("NCCL_IB_HCA==mlx5_2:1\n");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_EQ(std::filesystem::path(*a).filename(), ncclConfFileName("NCCL_IB_HCA==mlx5_1:1\n"));
  ASSERT_TRUE(state.writeTopology("{}\n").ok());
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().string().find(".tmp-"), std::string::npos) << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 3u);
}

} // namespace
} // namespace kube_rdma
