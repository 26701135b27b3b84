#include "common/labels/nfd_features.h"

#include <gtest/gtest.h>

#include "common/pools/plugin_config.h"
#include "common/node/sysfs_discovery.h"
#include "test/nfd_feature_reader.h"

namespace kube_rdma {
namespace {

using std::chrono::system_clock;

// 2026-12-01T10:00:00Z
const system_clock::time_point kExpiry = system_clock::from_time_t(1796119200);

NodeTopology fixture(const std::string& name) {
  const std::string root = std::string(KUBE_RDMA_FIXTURES) + "/" + name;
  return discoverFromSysfs({root + "/sys", root + "/proc"});
}

std::string featureFile(const NodeTopology& topology, bool peer_memory) {
  return nfdFeatureFile(
      nodeLabels(topology, buildPools(topology, defaultPluginConfig()), peer_memory), kExpiry);
}

TEST(NfdFeatures, TheA100NodesFileIsGolden) {
  // Eight RoCE data ports at 200 Gb/s (mlx5_0, the management NIC, is in no pool), eight GPUs.
  EXPECT_EQ(featureFile(fixture("a100-roce"), true),
            "# kube-rdma node labels, rewritten by their daemon before they expire\n"
            "# +expiry-time=2026-12-01T10:00:00Z\n"
            "kube-rdma.io/data-ports=8\n"
            "kube-rdma.io/data-ports-active=8\n"
            "kube-rdma.io/gpudirect-rdma=true\n"
            "kube-rdma.io/port-rate-gbps=200\n"
            "kube-rdma.io/rdma=true\n"
            "kube-rdma.io/roce=true\n");
}

TEST(NfdFeatures, TheInfinibandNodesFileIsGolden) {
  EXPECT_EQ(featureFile(fixture("ib-hdr8"), false),
            "# kube-rdma node labels, rewritten by their daemon before they expire\n"
            "# +expiry-time=2026-12-01T10:00:00Z\n"
            "kube-rdma.io/data-ports=8\n"
            "kube-rdma.io/data-ports-active=8\n"
            "kube-rdma.io/infiniband=true\n"
            "kube-rdma.io/port-rate-gbps=200\n"
            "kube-rdma.io/rdma=true\n");
}

TEST(NfdFeatures, NfdReadsBackTheLabelsAndTheExpiryOfBothFixtures) {
  for (const char* name : {"a100-roce", "ib-hdr8"}) {
    const NodeTopology topology = fixture(name);
    const NodeLabels labels =
        nodeLabels(topology, buildPools(topology, defaultPluginConfig()), true);
    auto read = readNfdFeatureFile(nfdFeatureFile(labels, kExpiry), kExpiry);
    ASSERT_TRUE(read.ok()) << name << ": " << read.error().message;
    EXPECT_EQ(read->labels, labels) << name;
    EXPECT_EQ(read->expiry, kExpiry) << name;
    // A second later NFD drops them all.
    auto expired =
        readNfdFeatureFile(nfdFeatureFile(labels, kExpiry), kExpiry + std::chrono::seconds(1));
    ASSERT_TRUE(expired.ok());
    EXPECT_TRUE(expired->labels.empty()) << name;
  }
}

TEST(NfdFeatures, ADownPortLeavesTheActiveCountAndTheRate) {
  NodeTopology topology = fixture("a100-roce");
  const auto pools = buildPools(topology, defaultPluginConfig());
  for (auto& device : topology.devices) {
    if (device.name == "mlx5_3") {
      device.ports[0].state = PortState::kDown;
      device.ports[0].rate_gbps = 10; // what a down mlx5 port often reports
    }
  }
  const NodeLabels labels = nodeLabels(topology, pools, false);
  EXPECT_EQ(labels.at("kube-rdma.io/data-ports"), "8");
  EXPECT_EQ(labels.at("kube-rdma.io/data-ports-active"), "7");
  EXPECT_EQ(labels.at("kube-rdma.io/port-rate-gbps"), "200");
}

TEST(NfdFeatures, ActivePortsOfDifferentRatesAreMixedAndBothLinkLayersAreLabelled) {
  NodeTopology topology = fixture("ib-hdr8");
  topology.devices[2].ports[0].rate_gbps = 400;
  topology.devices[3].ports[0].link_layer = LinkLayer::kEthernet;
  PluginConfig config = defaultPluginConfig();
  const NodeLabels labels = nodeLabels(topology, buildPools(topology, config), false);
  EXPECT_EQ(labels.at("kube-rdma.io/port-rate-gbps"), "mixed");
  EXPECT_EQ(labels.at("kube-rdma.io/infiniband"), "true");
  EXPECT_EQ(labels.at("kube-rdma.io/roce"), "true");
}

TEST(NfdFeatures, NoDataPortNoLabelAndNoGpuNoGpudirect) {
  const NodeTopology ib = fixture("ib-hdr8");
  EXPECT_TRUE(nodeLabels(ib, {}, true).empty());
  NodeTopology no_gpus = ib;
  no_gpus.gpus.clear();
  EXPECT_EQ(nodeLabels(no_gpus, buildPools(no_gpus, defaultPluginConfig()), true)
                .count("kube-rdma.io/gpudirect-rdma"),
            0u);
  const auto file = nfdFeatureFile({}, kExpiry);
  auto read = readNfdFeatureFile(file, kExpiry);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->labels.empty());
}

// The reader is the test's judge: it must refuse what NFD or the API server would.
TEST(NfdFeatureReader, RefusesWhatNfdOrTheApiServerWouldNotTake) {
  const auto now = kExpiry;
  for (const char* bad : {
           "kube-rdma.io/x="
           "0123456789012345678901234567890123456789012345678901234567890123\n",
           "kube-rdma.io/x=-leading-dash\n",
           "kube-rdma.io/x=a b\n",
           "kube-rdma.io/-x=1\n",
           "rdma=true\n",
           "Kube-RDMA.io/x=1\n",
           "node.kubernetes.io/x=1\n",
           "# +expiry-time=tomorrow\n",
           "# +expires=2026-12-01T10:00:00Z\n",
       }) {
    EXPECT_FALSE(readNfdFeatureFile(bad, now).ok()) << bad;
  }
  auto read = readNfdFeatureFile(
      "# +expiry-time=2026-12-01T11:00:00+01:00\n"
      "  kube-rdma.io/a  \n\n# plain comment\nfeature.node.kubernetes.io/b=x_y.z\n",
      now);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->expiry, kExpiry);
  EXPECT_EQ(read->labels.at("kube-rdma.io/a"), "true");
  EXPECT_EQ(read->labels.at("feature.node.kubernetes.io/b"), "x_y.z");
}

} // namespace
} // namespace kube_rdma
