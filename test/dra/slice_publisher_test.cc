// SlicePublisher: the plan (what to create, update and delete) on plain JSON, and the loop
// against the API-server simulator over real TLS.
#include "dra/slice_publisher.h"

#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "dra/resource_slice.h"
#include "test/dra/dra_test_support.h"
#include "test/fakes/fake_clock.h"
#include "test/apiserver/simulated_api.h"
#include "test/webhook/eventually.h"

namespace kube_rdma {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

std::vector<ordered_json> wantedSlices(const NodeTopology& topology) {
  return resourceSlicesFor(topology, defaultPluginConfig(), {kTestNode, "node-uid"}, 0).slices;
}

// A slice as the API server lists it: the wanted one under `name` at `generation`.
json listedSlice(const ordered_json& wanted, const std::string& name, int64_t generation) {
  json slice = json::parse(wanted.dump());
  slice["metadata"]["name"] = name;
  slice["spec"]["pool"]["generation"] = generation;
  return slice;
}

TEST(SliceChangesPlan, NothingListedCreatesEverySliceAboveTheLastGeneration) {
  const std::vector<ordered_json> wanted = wantedSlices(discoverFixture("a100-roce"));
  const SliceChanges changes = planSliceChanges(wanted, {}, 4);
  ASSERT_EQ(changes.create.size(), 1u);
  EXPECT_TRUE(changes.update.empty());
  EXPECT_TRUE(changes.remove.empty());
  EXPECT_EQ(changes.generation, 5);
  EXPECT_EQ(changes.create[0]["spec"]["pool"]["generation"], 5);
  EXPECT_EQ(changes.create[0]["metadata"]["generateName"], "gpu-node-1-rdma.kube-rdma.io-");
}

TEST(SliceChangesPlan, AnEqualSliceChangesNothingWhateverItsGeneration) {
  const std::vector<ordered_json> wanted = wantedSlices(discoverFixture("a100-roce"));
  const SliceChanges changes = planSliceChanges(wanted, {listedSlice(wanted[0], "s-1", 7)}, 2);
  EXPECT_TRUE(changes.empty());
  EXPECT_EQ(changes.generation, 7);
}

TEST(SliceChangesPlan, ChangedDevicesUpdateTheSliceAtAHigherGeneration) {
  NodeTopology topology = discoverFixture("a100-roce");
  const std::vector<ordered_json> before = wantedSlices(topology);
  topology.devices.pop_back();
  const SliceChanges changes =
      planSliceChanges(wantedSlices(topology), {listedSlice(before[0], "s-1", 3)}, 3);
  ASSERT_EQ(changes.update.size(), 1u);
  EXPECT_EQ(changes.update[0]["metadata"]["name"], "s-1");
  EXPECT_EQ(changes.update[0]["spec"]["pool"]["generation"], 4);
  EXPECT_EQ(changes.update[0]["spec"]["devices"].size(), before[0]["spec"]["devices"].size() - 1);
}

TEST(SliceChangesPlan, DuplicatesAreDeletedKeepingTheFirstByName) {
  const std::vector<ordered_json> wanted = wantedSlices(discoverFixture("a100-roce"));
  const SliceChanges changes = planSliceChanges(
      wanted, {listedSlice(wanted[0], "s-b", 2), listedSlice(wanted[0], "s-a", 2)}, 0);
  EXPECT_TRUE(changes.create.empty());
  EXPECT_TRUE(changes.update.empty());
  EXPECT_EQ(changes.remove, std::vector<std::string>{"s-b"});
  EXPECT_EQ(changes.generation, 2);
}

TEST(SliceChangesPlan, TheTaintTimeTheServerStampedIsNoDifferenceAndIsKept) {
  NodeTopology topology = discoverFixture("port-down");
  json listed = listedSlice(wantedSlices(topology)[0], "s-1", 3);
  for (json& device : listed["spec"]["devices"]) {
    if (device.contains("taints")) {
      device["taints"][0]["timeAdded"] = "2026-12-05T08:00:00Z";
    }
  }
  EXPECT_TRUE(planSliceChanges(wantedSlices(topology), {listed}, 3).empty());

  topology.devices.back().fw_ver = "20.99.9999"; // another change: the slice is updated
  const SliceChanges changes = planSliceChanges(wantedSlices(topology), {listed}, 3);
  ASSERT_EQ(changes.update.size(), 1u);
  size_t kept = 0;
  for (const json& device : changes.update[0]["spec"]["devices"]) {
    if (device.contains("taints")) {
      EXPECT_EQ(device["taints"][0]["timeAdded"], "2026-12-05T08:00:00Z");
      ++kept;
    }
  }
  EXPECT_EQ(kept, 1u);
}

class SlicePublisherTest : public testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(api_.start(), "");
    api_.simulator().put(
        "nodes", {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", kTestNode}}}});
    // Another node's slice of the same driver: never touched.
    api_.simulator().put("resourceslices", [] {
      json other = json::parse(wantedSlices(NodeTopology{})[0].dump());
      other["metadata"] = {{"name", "other-node-slice"}};
      other["spec"]["nodeName"] = "other-node";
      other["spec"]["pool"]["name"] = "other-node";
      return other;
    }());
  }

  // The node's slices in the simulator, read without a request: the publisher's requests alone
  // meet the failures a test injects.
  std::vector<json> nodeSlices() {
    std::vector<json> slices;
    for (json& slice : api_.simulator().objects("resourceslices")) {
      if (slice["spec"]["nodeName"] == kTestNode) {
        slices.push_back(std::move(slice));
      }
    }
    return slices;
  }

  bool publishedExactly(size_t devices, int64_t min_generation) {
    const std::vector<json> slices = nodeSlices();
    return slices.size() == 1 && slices[0]["spec"]["devices"].size() == devices &&
           slices[0]["spec"]["pool"]["generation"].get<int64_t>() >= min_generation;
  }

  // After the first publication: the Node's GET, the LIST, the POST and the WATCH reached the
  // server, and nothing follows them (a publisher rewriting the slice would be seen here).
  bool quietAfterTheFirstPublication() {
    if (!eventually([&] { return api_.simulator().requestCount() == 4; })) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return api_.simulator().requestCount() == 4;
  }

  SimulatedApi api_;
  NodeTopology topology_ = discoverFixture("a100-roce");
  std::ostringstream log_;
  Logger logger_{log_};
  MetricsRegistry registry_;
  DraMetrics metrics_{registry_};
  RealClock clock_;
  SlicePublisherOptions fast_ = [] {
    SlicePublisherOptions options;
    options.backoff = {std::chrono::milliseconds(10), std::chrono::milliseconds(100), 2, 1.0};
    options.watch.backoff = options.backoff;
    options.min_topology_interval = std::chrono::milliseconds(0);
    return options;
  }();
  SlicePublisherOptions sharing_ = [this] {
    SlicePublisherOptions options = fast_;
    options.slices.share_ports = true;
    return options;
  }();
};

TEST_F(SlicePublisherTest, PublishesTheNodesSliceOwnedByTheNode) {
  SlicePublisher publisher(api_.api(), kTestNode, defaultPluginConfig(), logger_, metrics_, clock_,
                           fast_);
  publisher.start(topology_);
  ASSERT_TRUE(eventually([&] { return publishedExactly(8, 1); })) << log_.str();
  const json slice = nodeSlices()[0];
  const json node = *api_.simulator().object("nodes", "", kTestNode);
  EXPECT_EQ(slice["metadata"]["ownerReferences"][0]["uid"], node["metadata"]["uid"]);
  EXPECT_EQ(slice["spec"]["driver"], kDraDriverName);
  EXPECT_TRUE(api_.simulator().object("resourceslices", "", "other-node-slice").has_value());
}

TEST_F(SlicePublisherTest, ASliceSomeoneDeletedComesBackAtAHigherGeneration) {
  SlicePublisher publisher(api_.api(), kTestNode, defaultPluginConfig(), logger_, metrics_, clock_,
                           fast_);
  publisher.start(topology_);
  ASSERT_TRUE(eventually([&] { return publishedExactly(8, 1); })) << log_.str();
  const std::string name = nodeSlices()[0]["metadata"]["name"];
  ASSERT_TRUE(api_.simulator().remove("resourceslices", "", name));
  ASSERT_TRUE(eventually([&] { return publishedExactly(8, 2); })) << log_.str();
}

TEST_F(SlicePublisherTest, AChangedTopologyRaisesTheGeneration) {
  SlicePublisher publisher(api_.api(), kTestNode, defaultPluginConfig(), logger_, metrics_, clock_,
                           fast_);
  publisher.start(topology_);
  ASSERT_TRUE(eventually([&] { return publishedExactly(8, 1); })) << log_.str();
  const std::string name = nodeSlices()[0]["metadata"]["name"];
  NodeTopology smaller = topology_;
  smaller.devices.pop_back();
  publisher.set(smaller);
  ASSERT_TRUE(eventually([&] { return publishedExactly(7, 2); })) << log_.str();
  EXPECT_EQ(nodeSlices()[0]["metadata"]["name"], name); // updated, not replaced
}

TEST_F(SlicePublisherTest, ASliceSomeoneChangedIsPutBack) {
  SlicePublisher publisher(api_.api(), kTestNode, defaultPluginConfig(), logger_, metrics_, clock_,
                           fast_);
  publisher.start(topology_);
  ASSERT_TRUE(eventually([&] { return publishedExactly(8, 1); })) << log_.str();
  json changed = nodeSlices()[0];
  changed["spec"]["devices"].erase(0);
  api_.simulator().put("resourceslices", changed);
  ASSERT_TRUE(eventually([&] { return publishedExactly(8, 2); })) << log_.str();
}

TEST_F(SlicePublisherTest, OnceInStepItSendsNothingAndAChangeIsOnePut) {
  FakeClock clock;
  SlicePublisher publisher(api_.api(), kTestNode, defaultPluginConfig(), logger_, metrics_, clock,
                           fast_);
  publisher.start(topology_);
  ASSERT_TRUE(eventually([&] { return publishedExactly(8, 1); })) << log_.str();
  // The Node's GET, the LIST, the POST and the WATCH reached the server.
  ASSERT_TRUE(eventually([&] { return api_.simulator().requestCount() == 4; }));
  const size_t requests = api_.simulator().requestCount();
  // In step, the publisher waits for the topology or the watch; the old one listed every second.
  // 59 minutes of its clock later it is waiting again and has asked nothing.
  ASSERT_TRUE(clock.awaitParked(1));
  clock.advance(std::chrono::minutes(59));
  ASSERT_TRUE(clock.awaitParked(1));
  EXPECT_EQ(api_.simulator().requestCount(), requests);
  NodeTopology smaller = topology_;
  smaller.devices.pop_back();
  publisher.set(smaller);
  ASSERT_TRUE(eventually([&] { return publishedExactly(7, 2); })) << log_.str();
  std::this_thread::sleep_for(std::chrono::milliseconds(100)); // its own watch event arrives
  EXPECT_EQ(api_.simulator().requestCount(), requests + 1);    // the PUT, no GET before it
}

TEST_F(SlicePublisherTest, AFlappingPortIsPublishedOncePerInterval) {
  SlicePublisherOptions slow = fast_;
  slow.min_topology_interval = std::chrono::milliseconds(500);
  SlicePublisher publisher(api_.api(), kTestNode, defaultPluginConfig(), logger_, metrics_, clock_,
                           slow);
  publisher.start(topology_);
  ASSERT_TRUE(eventually([&] { return publishedExactly(8, 1); })) << log_.str();
  NodeTopology down = topology_;
  down.devices.pop_back();
  for (int flap = 0; flap < 5; ++flap) {
    publisher.set(down);
    publisher.set(topology_);
  }
  publisher.set(down);
  // The first change went out at once (if the interval since the first publication had passed)
  // or with the interval; the four flaps after it were folded into one update with the last
  // state.
  ASSERT_TRUE(eventually([&] { return publishedExactly(7, 2); })) << log_.str();
  EXPECT_LE(nodeSlices()[0]["spec"]["pool"]["generation"].get<int64_t>(), 3);
}

TEST_F(SlicePublisherTest, DuplicateSlicesAreCleanedUp) {
  const json stale = listedSlice(wantedSlices(topology_)[0], "gpu-node-1-stale", 1);
  api_.simulator().put("resourceslices", stale);
  json duplicate = stale;
  duplicate["metadata"]["name"] = "gpu-node-1-zz-duplicate";
  api_.simulator().put("resourceslices", duplicate);
  SlicePublisher publisher(api_.api(), kTestNode, defaultPluginConfig(), logger_, metrics_, clock_,
                           fast_);
  publisher.start(topology_);
  ASSERT_TRUE(eventually([&] { return nodeSlices().size() == 1; })) << log_.str();
  EXPECT_EQ(nodeSlices()[0]["metadata"]["name"], "gpu-node-1-stale");
}

TEST_F(SlicePublisherTest, ADownPortIsTaintedOnceAndUntaintedWhenItIsBack) {
  SlicePublisher publisher(api_.api(), kTestNode, defaultPluginConfig(), logger_, metrics_, clock_,
                           fast_);
  publisher.start(discoverFixture("port-down"));
  const auto tainted = [&] {
    size_t count = 0;
    for (const json& slice : nodeSlices()) {
      for (const json& device : slice["spec"]["devices"]) {
        count += device.contains("taints") && device["taints"][0].contains("timeAdded");
      }
    }
    return count;
  };
  ASSERT_TRUE(eventually([&] { return publishedExactly(8, 1) && tainted() == 1; })) << log_.str();
  // The server's timeAdded makes the stored slice differ from the wanted one: not a reason to
  // write again.
  EXPECT_TRUE(quietAfterTheFirstPublication()) << log_.str();
  publisher.set(topology_);
  ASSERT_TRUE(eventually([&] { return publishedExactly(8, 2) && tainted() == 0; })) << log_.str();
}

TEST_F(SlicePublisherTest, AServerWithoutDeviceTaintsIsNotRewrittenForever) {
  api_.simulator().disableDeviceTaints();
  SlicePublisher publisher(api_.api(), kTestNode, defaultPluginConfig(), logger_, metrics_, clock_,
                           fast_);
  publisher.start(discoverFixture("port-down"));
  ASSERT_TRUE(eventually([&] { return publishedExactly(8, 1); })) << log_.str();
  ASSERT_TRUE(eventually([&] { return log_.str().find("dropped") != std::string::npos; }));
  EXPECT_TRUE(quietAfterTheFirstPublication()) << log_.str();
  EXPECT_EQ(nodeSlices()[0]["spec"]["pool"]["generation"].get<int64_t>(), 1);
  // Still published: a change after it goes out as before.
  publisher.set(topology_);
  ASSERT_TRUE(eventually([&] { return publishedExactly(8, 2); })) << log_.str();
}

TEST_F(SlicePublisherTest, AServerWithoutConsumableCapacityGetsExclusivePortsOnce) {
  api_.simulator().disableConsumableCapacity();
  SlicePublisher publisher(api_.api(), kTestNode, defaultPluginConfig(), logger_, metrics_, clock_,
                           sharing_);
  publisher.start(topology_);
  ASSERT_TRUE(eventually([&] { return publishedExactly(8, 1); })) << log_.str();
  ASSERT_TRUE(
      eventually([&] { return log_.str().find("consumable capacity") != std::string::npos; }));
  EXPECT_TRUE(quietAfterTheFirstPublication()) << log_.str();
  EXPECT_FALSE(nodeSlices()[0]["spec"]["devices"][0].contains("allowMultipleAllocations"));
}

TEST_F(SlicePublisherTest, SharedPortsAreStoredAsSentAndNotRewritten) {
  SlicePublisher publisher(api_.api(), kTestNode, defaultPluginConfig(), logger_, metrics_, clock_,
                           sharing_);
  publisher.start(topology_);
  ASSERT_TRUE(eventually([&] { return publishedExactly(8, 1); })) << log_.str();
  EXPECT_TRUE(quietAfterTheFirstPublication()) << log_.str();
  EXPECT_EQ(nodeSlices()[0]["spec"]["devices"][0]["allowMultipleAllocations"], true);
}

TEST_F(SlicePublisherTest, ServerErrorsAreRetriedAfterABackoff) {
  api_.simulator().failNext(5, 500);
  FakeClock clock;
  SlicePublisher publisher(api_.api(), kTestNode, defaultPluginConfig(), logger_, metrics_, clock,
                           fast_);
  publisher.start(topology_);
  // Each failure is followed by a backoff on the publisher's clock (its own thread's or its
  // informer's): a wait for a deadline under a second ahead, which the test then reaches. Five
  // failures over two threads: one of them waited at least three times. A retry without a wait
  // would publish with the clock standing still.
  const auto backingOff = [&] {
    const auto wait = clock.soonestWait();
    return wait && *wait < std::chrono::seconds(1);
  };
  int backoffs = 0;
  while (!publishedExactly(8, 1)) {
    ASSERT_TRUE(eventually([&] { return publishedExactly(8, 1) || backingOff(); })) << log_.str();
    if (const auto wait = clock.soonestWait(); wait && backingOff()) {
      clock.advance(*wait);
      ++backoffs;
    }
  }
  EXPECT_GE(backoffs, 3);
  EXPECT_NE(log_.str().find("retrying"), std::string::npos);
}

} // namespace
} // namespace kube_rdma
