#include "plugin/health_watcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>

#include "test/fakes/fake_clock.h"
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

TEST(HealthWatcher, SamplesOncePerIntervalAndReportsOnlyChanges) {
  using std::chrono::seconds;
  TempDir tmp;
  tmp.sub("sys/class/infiniband/mlx5_0");
  const std::string uverbs = tmp.sub("dev/infiniband") + "/uverbs0";
  std::ofstream(uverbs) << "";
  const auto topology = std::make_shared<const NodeTopology>(devicesWithUverbs({"uverbs0"}));
  const auto clock = std::make_shared<FakeClock>();
  std::atomic<int> samples = 0;
  std::atomic<int> device_set_changes = 0;
  HealthWatcher watcher(
      clock, tmp.path() + "/sys", tmp.path() + "/dev", seconds(10), [&] { return topology; },
      [&](const NodeHealthView&) { ++samples; }, [&] { ++device_set_changes; });
  const auto after = [&](std::chrono::steady_clock::duration by) {
    clock->advance(by);
    EXPECT_TRUE(clock->awaitParked(1)); // sampled, or not due, and waiting again
    return samples.load();
  };
  ASSERT_TRUE(clock->awaitParked(1));
  EXPECT_EQ(after(seconds(9)), 0);
  EXPECT_EQ(after(seconds(1)), 1); // the first sample is news
  // An idle node: sampled every interval, nothing reported.
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(after(seconds(10)), 1);
  }
  std::filesystem::remove(uverbs);
  EXPECT_EQ(after(seconds(10)), 2);
  // A longer interval moves the next sample to one new interval after the last.
  watcher.setInterval(seconds(60));
  std::ofstream(uverbs) << "";
  EXPECT_EQ(after(seconds(10)), 2);
  EXPECT_EQ(after(seconds(49)), 2);
  EXPECT_EQ(after(seconds(1)), 3);
  EXPECT_EQ(device_set_changes.load(), 0);
}

} // namespace
} // namespace kube_rdma
