// Informer: LIST then WATCH against the API-server simulator over real TLS; a compacted history,
// failing and throttling answers, and the caller's own writes.
#include "kubeclient/informer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <sstream>
#include <thread>

#include "test/apiserver/simulated_api.h"
#include "test/webhook/eventually.h"

namespace kube_rdma {
namespace {

using json = nlohmann::json;

std::string slicesPath() {
  return *collectionPath(kResourceSlices, "");
}

json slice(const std::string& name, const std::string& node, int generation = 1) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"driver", "rdma.kube-rdma.io"},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", generation}, {"resourceSliceCount", 1}}}}}};
}

class InformerTest : public ::testing::Test {
protected:
  void SetUp() override {
    // No kept-alive connection: the simulator's stop() would wait for the idle one to time out.
    ClientOptions options;
    options.max_idle_connections = 0;
    ASSERT_EQ(api_.start("system:serviceaccount:kube-rdma:rdma-dra-driver", options), "");
  }

  std::unique_ptr<Informer> informer(const std::string& field_selector = "spec.nodeName=node-a") {
    InformerOptions options;
    options.selectors.field_selector = field_selector;
    options.backoff = {std::chrono::milliseconds(10), std::chrono::milliseconds(50), 2.0, 1.0};
    return std::make_unique<Informer>(api_.api(), slicesPath(), options, logger_, clock_,
                                      [this] { ++changes_; });
  }

  // The generation of `name` in the informer's copy; -1 when it holds no such object.
  static int generationIn(const Informer& informer, const std::string& name) {
    const std::map<std::string, json> objects = informer.objects();
    const auto found = objects.find(name);
    return found == objects.end() ? -1 : found->second["spec"]["pool"]["generation"].get<int>();
  }

  SimulatedApi api_;
  std::ostringstream log_;
  Logger logger_{log_};
  RealClock clock_;
  std::atomic<int> changes_{0};
};

TEST_F(InformerTest, ListsThenFollowsChangesOfTheSelectedObjectsOnly) {
  api_.simulator().put("resourceslices", slice("a", "node-a"));
  api_.simulator().put("resourceslices", slice("elsewhere", "node-b"));
  auto watched = informer();
  watched->start();
  ASSERT_TRUE(eventually([&] { return watched->status().synced; })) << log_.str();
  EXPECT_EQ(generationIn(*watched, "a"), 1);
  EXPECT_EQ(generationIn(*watched, "elsewhere"), -1);

  api_.simulator().put("resourceslices", slice("a", "node-a", 2));
  api_.simulator().put("resourceslices", slice("b", "node-a"));
  ASSERT_TRUE(eventually([&] { return generationIn(*watched, "a") == 2; })) << log_.str();
  ASSERT_TRUE(eventually([&] { return generationIn(*watched, "b") == 1; }));
  ASSERT_TRUE(api_.simulator().remove("resourceslices", "", "a"));
  ASSERT_TRUE(eventually([&] { return generationIn(*watched, "a") == -1; }));
  EXPECT_GE(changes_.load(), 4);                  // the list, two changes, the delete
  EXPECT_EQ(api_.simulator().requestCount(), 2u); // one LIST, one WATCH (still open)
  EXPECT_TRUE(watched->status().connected);
}

TEST_F(InformerTest, WhileNothingChangesItSendsNoRequest) {
  auto watched = informer();
  watched->start();
  // The LIST and the WATCH reached the server.
  ASSERT_TRUE(eventually([&] { return api_.simulator().requestCount() == 2; }));
  const size_t requests = api_.simulator().requestCount();
  // A poller with any period under 200 ms would have asked again by now.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(api_.simulator().requestCount(), requests);
}

TEST_F(InformerTest, ACompactedHistoryMeansListingAgain) {
  api_.simulator().failNext(1, 500); // the first LIST fails and is retried
  InformerOptions options;
  options.selectors.field_selector = "spec.nodeName=node-a";
  options.backoff = {std::chrono::milliseconds(10), std::chrono::milliseconds(50), 2.0, 1.0};
  options.min_watch_timeout = std::chrono::seconds(1);
  Informer watched(api_.api(), slicesPath(), options, logger_, clock_, [this] { ++changes_; });
  watched.start();
  ASSERT_TRUE(eventually([&] { return watched.status().synced; })) << log_.str();
  EXPECT_NE(log_.str().find("HTTP 500"), std::string::npos) << log_.str();
  // A change elsewhere moves the server on and compaction forgets it. The watch, ended by its
  // timeout, comes back from the list's version: 410 Expired, so the informer lists again.
  api_.simulator().put("resourceslices", slice("elsewhere", "node-b"));
  api_.simulator().compactHistory();
  // Nothing on node-a changes, so each on_change is a successful LIST.
  ASSERT_TRUE(eventually([&] { return changes_ == 2; })) << log_.str();
  EXPECT_NE(log_.str().find("too old; listing again"), std::string::npos) << log_.str();
}

TEST_F(InformerTest, ThrottlingIsWaitedOutForTheServersRetryAfter) {
  api_.simulator().failNext(1, 429); // Retry-After: 1
  auto watched = informer();
  const auto began = std::chrono::steady_clock::now();
  watched->start();
  ASSERT_TRUE(eventually([&] { return watched->status().synced; })) << log_.str();
  // The policy's own backoff is at most 100 ms: only the header explains a second.
  EXPECT_GE(std::chrono::steady_clock::now() - began, std::chrono::seconds(1));
  EXPECT_NE(log_.str().find("retry_in_ms=1000"), std::string::npos) << log_.str();
}

TEST_F(InformerTest, AnUnreachableServerIsReportedAndTheCopyKept) {
  api_.simulator().put("resourceslices", slice("a", "node-a"));
  auto watched = informer();
  watched->start();
  // The LIST and the WATCH reached the server.
  ASSERT_TRUE(eventually([&] { return api_.simulator().requestCount() == 2; }));
  api_.simulator().stop(); // the open watch ends; the next one finds nobody listening
  ASSERT_TRUE(eventually([&] { return !watched->status().connected; })) << log_.str();
  const InformerStatus status = watched->status();
  EXPECT_TRUE(status.disconnected_since.has_value());
  EXPECT_NE(status.last_error.find("watching /apis/resource.k8s.io/v1/resourceslices"),
            std::string::npos)
      << status.last_error;
  EXPECT_EQ(generationIn(*watched, "a"), 1); // the copy survives the outage
}

TEST_F(InformerTest, AnEventOlderThanARememberedWriteDoesNotUndoIt) {
  api_.simulator().put("resourceslices", slice("a", "node-a"));
  auto watched = informer();
  watched->start();
  ASSERT_TRUE(eventually([&] { return watched->status().synced; }));
  json written = slice("a", "node-a", 5);
  written["metadata"]["resourceVersion"] = std::to_string(api_.simulator().resourceVersion() + 100);
  watched->remember(written);
  api_.simulator().put("resourceslices", slice("a", "node-a", 3)); // an event at a lower version
  api_.simulator().put("resourceslices", slice("b", "node-a"));    // and one to know it was seen
  ASSERT_TRUE(eventually([&] { return generationIn(*watched, "b") == 1; }));
  EXPECT_EQ(generationIn(*watched, "a"), 5);
  watched->forget("a");
  EXPECT_EQ(generationIn(*watched, "a"), -1);
}

TEST(ResourceVersionTest, OnlyDecimalVersionsCompare) {
  EXPECT_TRUE(olderVersion("9", "10"));
  EXPECT_FALSE(olderVersion("10", "9"));
  EXPECT_FALSE(olderVersion("10", "10"));
  EXPECT_FALSE(olderVersion("", "10"));
  EXPECT_FALSE(olderVersion("abc", "10"));
}

} // namespace
} // namespace kube_rdma
