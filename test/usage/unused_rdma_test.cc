#include "usage/unused_rdma.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <sstream>

#include "test/fakes/fake_clock.h"

namespace kube_rdma {
namespace {

using std::chrono::seconds;

PodPortTraffic pod(const std::string& name, uint64_t words,
                   std::vector<std::string> ports = {"mlx5_1:1"}) {
  return {"training", name, std::move(ports), words};
}

std::vector<std::string> names(const std::vector<PodPortTraffic>& pods) {
  std::vector<std::string> out;
  for (const auto& p : pods) {
    out.push_back(p.pod_name);
  }
  return out;
}

TEST(PodPortTraffic, SumsTheDataCountersOfEachPodsPortsAcrossItsContainers) {
  // Which container holds which port is the daemon's to say: here, by container name.
  const std::map<std::string, std::vector<HcaPort>> ports_of_container = {
      {"pytorch", {{"mlx5_3", 1}, {"mlx5_7", 1}}}, {"sidecar", {{"mlx5_7", 1}}}, {"other", {}}};
  const std::map<std::string, uint64_t> words = {
      {"mlx5_3", 120}, {"mlx5_7", 3}, {"mlx5_5", 700}}; // mlx5_5: nobody's
  std::vector<std::string> read;
  const auto traffic = podPortTraffic(
      {{"training", "worker-0", "pytorch", {}, {}},
       {"training", "worker-0", "sidecar", {}, {}},
       {"training", "worker-1", "other", {}, {}}},
      [&](const ContainerHoldings& container) {
        return ports_of_container.at(container.container);
      },
      [&](const HcaPort& port) {
        read.push_back(port.device);
        return std::optional<uint64_t>(words.at(port.device));
      });
  ASSERT_EQ(traffic.size(), 1u); // worker-1 holds no RDMA port
  EXPECT_EQ(traffic[0], (PodPortTraffic{"training", "worker-0", {"mlx5_3:1", "mlx5_7:1"}, 123}));
  EXPECT_EQ(read, (std::vector<std::string>{"mlx5_3", "mlx5_7"})); // the ports held, once each
}

TEST(PodPortTraffic, APodWithAPortThatCannotBeReadIsLeftOut) {
  const auto traffic = podPortTraffic(
      {{"training", "worker-0", "pytorch", {}, {}}, {"training", "worker-1", "pytorch", {}, {}}},
      [](const ContainerHoldings& container) {
        return container.pod == "worker-0" ? std::vector<HcaPort>{{"mlx5_1", 1}, {"mlx5_2", 1}}
                                           : std::vector<HcaPort>{{"mlx5_1", 1}};
      },
      [](const HcaPort& port) {
        return port.device == "mlx5_2" ? std::nullopt : std::optional<uint64_t>(5);
      });
  ASSERT_EQ(traffic.size(), 1u);
  EXPECT_EQ(traffic[0], (PodPortTraffic{"training", "worker-1", {"mlx5_1:1"}, 5}));
}

TEST(UnusedRdmaDetector, FlagsAPodOnceWhenItsPortsStayedStillForTheWholeWait) {
  UnusedRdmaDetector detector;
  const auto start = std::chrono::steady_clock::time_point(std::chrono::hours(1));
  EXPECT_TRUE(detector.observe(start, seconds(60), {pod("idle", 500)}).empty());
  EXPECT_TRUE(detector.observe(start + seconds(59), seconds(60), {pod("idle", 500)}).empty());
  EXPECT_EQ(names(detector.observe(start + seconds(60), seconds(60), {pod("idle", 500)})),
            std::vector<std::string>{"idle"});
  EXPECT_TRUE(detector.observe(start + seconds(120), seconds(60), {pod("idle", 500)}).empty());
  EXPECT_EQ(names(detector.flagged()), std::vector<std::string>{"idle"});
  // Traffic at last: no longer flagged, and never again.
  detector.observe(start + seconds(121), seconds(60), {pod("idle", 900)});
  EXPECT_TRUE(detector.flagged().empty());
  EXPECT_TRUE(detector.observe(start + seconds(900), seconds(60), {pod("idle", 900)}).empty());
}

TEST(UnusedRdmaDetector, APodWhosePortsMovedOnceIsNeverFlagged) {
  UnusedRdmaDetector detector;
  const auto start = std::chrono::steady_clock::time_point(std::chrono::hours(1));
  detector.observe(start, seconds(60), {pod("busy", 500), pod("reset", 500)});
  // A counter that went down was reset: the port moved, or the pod would be flagged wrongly.
  detector.observe(start + seconds(10), seconds(60), {pod("busy", 501), pod("reset", 0)});
  EXPECT_TRUE(
      detector.observe(start + seconds(600), seconds(60), {pod("busy", 501), pod("reset", 0)})
          .empty());
  EXPECT_TRUE(detector.flagged().empty());
}

TEST(UnusedRdmaDetector, APodThatWentIsForgottenAndOneOfTheSameNameStartsOver) {
  UnusedRdmaDetector detector;
  const auto start = std::chrono::steady_clock::time_point(std::chrono::hours(1));
  detector.observe(start, seconds(60), {pod("worker", 7)});
  detector.observe(start + seconds(60), seconds(60), {pod("worker", 7)});
  ASSERT_EQ(names(detector.flagged()), std::vector<std::string>{"worker"});
  detector.observe(start + seconds(61), seconds(60), {});
  EXPECT_TRUE(detector.flagged().empty());
  // Back (a new pod of the same name): a wait of its own before it can be flagged.
  detector.observe(start + seconds(62), seconds(60), {pod("worker", 7)});
  EXPECT_TRUE(detector.observe(start + seconds(100), seconds(60), {pod("worker", 7)}).empty());
  EXPECT_EQ(names(detector.observe(start + seconds(122), seconds(60), {pod("worker", 7)})),
            std::vector<std::string>{"worker"});
  // Other ports under the same name without a gap between the samples: a new pod too.
  detector.observe(start + seconds(123), seconds(60), {pod("worker", 7, {"mlx5_2:1"})});
  EXPECT_TRUE(detector.flagged().empty());
}

TEST(UnusedRdmaWarning, NamesThePortsTheWaitAndWhatToDo) {
  const PodWarning warning =
      unusedRdmaWarning(pod("worker-0", 0, {"mlx5_1:1", "mlx5_2:1"}), "uid-1", seconds(900));
  EXPECT_EQ(warning.pod_uid, "uid-1");
  EXPECT_EQ(warning.reason, "RdmaGrantedNotUsed");
  EXPECT_NE(warning.message.find("mlx5_1:1, mlx5_2:1 for 900 s"), std::string::npos);
  EXPECT_NE(warning.message.find("TCP sockets"), std::string::npos);
  EXPECT_NE(warning.message.find("NCCL_NET=IB"), std::string::npos);
}

class UnusedRdmaWatcherTest : public ::testing::Test {
protected:
  UnusedRdmaWatcher watcher(std::vector<PodWarning>& warned) {
    return {clock_,
            [this] { return sample_; },
            [](const std::string&, const std::string& name) {
              return name == "stranger" ? "" : "uid-" + name;
            },
            [&warned](const PodWarning& warning) { warned.push_back(warning); },
            metrics_,
            logger_};
  }
  std::string rendered() const { return metrics_.render(); }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  UnusedRdmaWatcher::Sample sample_{seconds(60), std::vector<PodPortTraffic>{}};
  MetricsRegistry metrics_;
  std::ostringstream log_;
  Logger logger_{log_};
};

TEST_F(UnusedRdmaWatcherTest, WarnsPodsWithAKnownUidAndShowsEveryFlaggedPodInMetrics) {
  std::vector<PodWarning> warned;
  auto unused = watcher(warned);
  sample_.pods = std::vector<PodPortTraffic>{pod("worker-0", 1), pod("stranger", 1)};
  EXPECT_EQ(unused.checkOnce(), std::chrono::milliseconds(6000)); // a tenth of the wait
  clock_->advance(seconds(60));
  unused.checkOnce();
  ASSERT_EQ(warned.size(), 1u); // no UID, no event: the metric and the log still say it
  EXPECT_EQ(warned[0].pod_name, "worker-0");
  EXPECT_EQ(warned[0].pod_uid, "uid-worker-0");
  EXPECT_NE(rendered().find("kube_rdma_pod_rdma_unused{namespace=\"training\",pod=\"worker-0\"} 1"),
            std::string::npos);
  EXPECT_NE(rendered().find("kube_rdma_pod_rdma_unused{namespace=\"training\",pod=\"stranger\"} 1"),
            std::string::npos);
  EXPECT_NE(log_.str().find("pod UID unknown"), std::string::npos);

  clock_->advance(seconds(60));
  unused.checkOnce();
  EXPECT_EQ(warned.size(), 1u); // once
  sample_.pods = std::vector<PodPortTraffic>{pod("stranger", 1)};
  unused.checkOnce();
  EXPECT_EQ(rendered().find("pod=\"worker-0\""), std::string::npos);
}

TEST_F(UnusedRdmaWatcherTest, NoAnswerFromTheKubeletKeepsWhatWasSeenAndZeroTurnsItOff) {
  std::vector<PodWarning> warned;
  auto unused = watcher(warned);
  sample_.pods = std::vector<PodPortTraffic>{pod("worker-0", 1)};
  unused.checkOnce();
  sample_.pods = std::nullopt;
  clock_->advance(seconds(60));
  unused.checkOnce();
  EXPECT_TRUE(warned.empty());
  sample_.pods = std::vector<PodPortTraffic>{pod("worker-0", 1)};
  unused.checkOnce(); // the wait counts from the first sample, across the gap
  EXPECT_EQ(warned.size(), 1u);

  sample_ = {seconds(0), std::nullopt};
  EXPECT_EQ(unused.checkOnce(), std::chrono::milliseconds(30000));
  EXPECT_EQ(rendered().find("kube_rdma_pod_rdma_unused{"), std::string::npos);
}

} // namespace
} // namespace kube_rdma
