#include "plugin/health_watcher.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test/plugin/temp_dir.h"

namespace kube_rdma {
namespace {

NodeTopology devicesWithUverbs(const std::vector<std::string>& uverbs) {
  NodeTopology topology;
  for (size_t i = 0; i < uverbs.size(); ++i) {
    RdmaDevice device;
    device.name = "mlx5_" + std::to_string(i);
    device.uverbs = uverbs[i];
    topology.devices.push_back(device);
  }
  return topology;
}

TEST(PresentUverbs, NamesTheNodesOfTheTopologyThatExistUnderDevRoot) {
  TempDir tmp;
  const std::string dir = tmp.sub("dev/infiniband");
  for (const char* name : {"uverbs0", "uverbs1.gone", "uverbs7", "rdma_cm"}) {
    std::ofstream(dir + "/" + name) << "";
  }
  const auto topology = devicesWithUverbs({"uverbs0", "uverbs1", "", "uverbs3"});
  EXPECT_EQ(presentUverbs(topology, tmp.path() + "/dev"), std::set<std::string>{"uverbs0"});
  EXPECT_TRUE(presentUverbs(topology, tmp.path() + "/no-dev").empty());
}

TEST(ListRdmaDeviceNames, ListsTheClassDirectoryEntries) {
  TempDir tmp;
  const std::string dir = tmp.sub("sys/class/infiniband");
  for (const char* name : {"mlx5_10", "mlx5_2", "rocep1s0f0"}) {
    std::ofstream(dir + "/" + name) << "";
  }
  EXPECT_EQ(listRdmaDeviceNames(tmp.path() + "/sys"),
            (std::set<std::string>{"mlx5_10", "mlx5_2", "rocep1s0f0"}));
  EXPECT_TRUE(listRdmaDeviceNames(tmp.path() + "/missing").empty());
}

} // namespace
} // namespace kube_rdma
