#include "common/labels/nfd_feature_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "common/checks/node_snapshot.h"
#include "common/node/sysfs_discovery.h"
#include "test/fakes/fake_clock.h"
#include "test/nfd_feature_reader.h"
#include "test/plugin/temp_dir.h"
#include "test/plugin/test_files.h"

namespace kube_rdma {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

const NodeLabels kLabels{{"kube-rdma.io/rdma", "true"}, {"kube-rdma.io/data-ports", "8"}};

class NfdFeatureWriterTest : public ::testing::Test {
protected:
  ReadFeatureFile read() {
    auto file = readNfdFeatureFile(readTestFile(path_), clock_->wallNow());
    EXPECT_TRUE(file.ok()) << file.error().message;
    return file.ok() ? *file : ReadFeatureFile{};
  }

  TempDir dir_;
  const std::string path_ = dir_.path() + "/features.d/kube-rdma";
  std::shared_ptr<FakeClock> clock_ =
      std::make_shared<FakeClock>(std::chrono::system_clock::from_time_t(1796119200));
  NfdFeatureWriter writer_{path_, minutes(10), clock_};
};

TEST_F(NfdFeatureWriterTest, WritesTheLabelsWithAnExpiryTtlAhead) {
  auto written = writer_.update(kLabels);
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_TRUE(*written);
  const ReadFeatureFile file = read();
  EXPECT_EQ(file.labels, kLabels);
  EXPECT_EQ(file.expiry, clock_->wallNow() + minutes(10));
  EXPECT_EQ(writer_.refreshDue(), clock_->now() + minutes(5));
}

TEST_F(NfdFeatureWriterTest, RewritesHalfWayToTheExpiryAndNotBefore) {
  ASSERT_TRUE(writer_.update(kLabels).ok());
  clock_->advance(seconds(299));
  auto written = writer_.update(kLabels);
  ASSERT_TRUE(written.ok());
  EXPECT_FALSE(*written);
  EXPECT_EQ(read().expiry, clock_->wallNow() - seconds(299) + minutes(10));
  clock_->advance(seconds(1));
  written = writer_.update(kLabels);
  ASSERT_TRUE(written.ok());
  EXPECT_TRUE(*written);
  // NFD would still have had 5 minutes of the old file; the new one runs 10 from now.
  EXPECT_EQ(read().expiry, clock_->wallNow() + minutes(10));
  EXPECT_EQ(writer_.refreshDue(), clock_->now() + minutes(5));
}

TEST_F(NfdFeatureWriterTest, RewritesAtOnceWhenALabelChanges) {
  ASSERT_TRUE(writer_.update(kLabels).ok());
  clock_->advance(seconds(1));
  NodeLabels changed = kLabels;
  changed["kube-rdma.io/data-ports"] = "7";
  auto written = writer_.update(changed);
  ASSERT_TRUE(written.ok());
  EXPECT_TRUE(*written);
  EXPECT_EQ(read().labels, changed);
}

TEST_F(NfdFeatureWriterTest, LeavesNoFileButItsOwnInTheDirectory) {
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(writer_.update(kLabels).ok());
    clock_->advance(minutes(5));
  }
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path() + "/features.d")) {
    names.push_back(entry.path().filename());
  }
  EXPECT_EQ(names, std::vector<std::string>{"kube-rdma"});
}

TEST_F(NfdFeatureWriterTest, AFailedWriteIsAnErrorAndIsTriedAgainSoon) {
  writeTestFile(dir_.path() + "/features.d", "a file where the directory should be");
  auto written = writer_.update(kLabels);
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.error().message.find("features.d"), std::string::npos)
      << written.error().message;
  EXPECT_EQ(writer_.refreshDue(), clock_->now() + seconds(10));
  std::filesystem::remove(dir_.path() + "/features.d");
  written = writer_.update(kLabels); // same labels, but the last ones were never written
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_TRUE(*written);
}

// The doctor's verdict decides: nvidia_peermem loaded on the A100 node, nv_peer_mem on the
// a100-nv-peer-mem one; on the degraded one neither is, with the proprietary module and kernel 5.4
// (no dma-buf either); the dual-port node has no GPUs.
TEST(GpuDirectReady, IsTheDoctorsGpuDirectCheckOnNodesWithGpus) {
  const auto ready = [](const std::string& fixture) {
    const std::string node = std::string(KUBE_RDMA_FIXTURES) + "/" + fixture;
    const DiscoveryRoots roots{node + "/sys", node + "/proc", node + "/dev"};
    return gpuDirectReady(discoverFromSysfs(roots), roots);
  };
  EXPECT_TRUE(ready("a100-roce"));
  EXPECT_TRUE(ready("a100-nv-peer-mem"));
  EXPECT_FALSE(ready("a100-degraded"));
  EXPECT_FALSE(ready("dual-port"));
}

// The GPU operator loads nvidia_peermem after the daemon started: the next judgement, at most
// `interval` later, sees it; a new topology is judged at once. (The daemons' judge reads the
// node: PluginIntegrationTest.TheGpuDirectLabelFollowsAPeermemModuleLoadedLater.)
TEST(GpuDirectReadiness, JudgesAgainOncePerIntervalAndForEveryNewTopology) {
  bool loaded = false;
  int judged = 0;
  auto clock = std::make_shared<FakeClock>();
  GpuDirectReadiness readiness(
      [&](const NodeTopology&) {
        ++judged;
        return loaded;
      },
      seconds(60), clock);
  NodeTopology topology;
  topology.gpus.resize(1);
  EXPECT_FALSE(readiness.ready(topology));
  loaded = true;
  clock->advance(seconds(59));
  EXPECT_FALSE(readiness.ready(topology)); // not judged again yet
  EXPECT_EQ(judged, 1);
  EXPECT_EQ(readiness.due(), clock->now() + seconds(1));
  clock->advance(seconds(1));
  EXPECT_TRUE(readiness.ready(topology));
  EXPECT_EQ(judged, 2);

  loaded = false;
  topology.gpus.resize(2);
  EXPECT_FALSE(readiness.ready(topology));
  EXPECT_EQ(judged, 3);
}

TEST(GpuDirectReadiness, IsJudgedAgainEachHalfLifetimeOfTheFileAndAtLeastOnceAMinute) {
  EXPECT_EQ(gpuDirectRecheckInterval(seconds(2)), seconds(1));
  EXPECT_EQ(gpuDirectRecheckInterval(seconds(90)), seconds(45));
  EXPECT_EQ(gpuDirectRecheckInterval(minutes(10)), seconds(60));
}

} // namespace
} // namespace kube_rdma
