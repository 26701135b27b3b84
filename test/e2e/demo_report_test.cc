#include "test/e2e/demo_report.h"

#include <gtest/gtest.h>

#include "test/plugin/test_files.h"
#include "test/yaml_documents.h"

namespace kube_rdma {
namespace {

const EnvOrigin* find(const std::vector<EnvOrigin>& rows, const std::string& name) {
  for (const EnvOrigin& e : rows) {
    if (e.name == name) {
      return &e;
    }
  }
  return nullptr;
}

TEST(FinalEnvironment, PodSpecBeatsAllocateAndNcclConfFillsOnlyWhatNeitherSets) {
  const NcclEnv user = {{"NCCL_IB_HCA", "=mlx5_1:1"}, {"PYTHONUNBUFFERED", "1"}};
  const NcclEnv patched = {{"NCCL_IB_HCA", "=mlx5_1:1"},
                           {"PYTHONUNBUFFERED", "1"},
                           {"NCCL_IB_DISABLE", "0"},
                           {"NCCL_IB_TIMEOUT", "22"}};
  const NcclEnv node = {{"NCCL_IB_HCA", "=mlx5_1:1,mlx5_2:1"},
                        {"NCCL_IB_DISABLE", "0"},
                        {"NCCL_IB_TIMEOUT", "14"},
                        {"KUBE_RDMA_DEVICES", "mlx5_1,mlx5_2"}};
  const NcclEnv conf = {{"NCCL_IB_HCA", "=mlx5_1:1,mlx5_2:1"},
                        {"NCCL_NET_GDR_LEVEL", "PIX"},
                        {"NCCL_NET_GDR_LEVEL", "SYS"}};
  const auto rows = finalEnvironment(user, patched, node, conf, "NCCL_");

  std::vector<std::string> names;
  names.reserve(rows.size());
  for (const EnvOrigin& e : rows) {
    names.push_back(e.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"NCCL_IB_DISABLE", "NCCL_IB_HCA", "NCCL_IB_TIMEOUT",
                                             "NCCL_NET_GDR_LEVEL"}));

  const EnvOrigin* hca = find(rows, "NCCL_IB_HCA");
  ASSERT_NE(hca, nullptr);
  EXPECT_EQ(hca->value, "=mlx5_1:1");
  EXPECT_EQ(hca->source, "user");
  using Shadowed = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(hca->shadowed,
            (Shadowed{{"node", "=mlx5_1:1,mlx5_2:1"}, {"nccl.conf", "=mlx5_1:1,mlx5_2:1"}}));

  // Same value in both layers: the pod spec's entry is the one that counts, nothing lost.
  const EnvOrigin* disable = find(rows, "NCCL_IB_DISABLE");
  ASSERT_NE(disable, nullptr);
  EXPECT_EQ(disable->source, "policy");
  EXPECT_TRUE(disable->shadowed.empty());

  const EnvOrigin* timeout = find(rows, "NCCL_IB_TIMEOUT");
  ASSERT_NE(timeout, nullptr);
  EXPECT_EQ(timeout->value, "22");
  EXPECT_EQ(timeout->source, "policy");
  EXPECT_EQ(timeout->shadowed, (Shadowed{{"node", "14"}}));

  // Only in nccl.conf: NCCL keeps the first line of a name.
  const EnvOrigin* gdr = find(rows, "NCCL_NET_GDR_LEVEL");
  ASSERT_NE(gdr, nullptr);
  EXPECT_EQ(gdr->value, "PIX");
  EXPECT_EQ(gdr->source, "nccl.conf");
}

TEST(FinalEnvironment, TheLastPodSpecEntryOfANameWins) {
  const NcclEnv user = {{"NCCL_DEBUG", "WARN"}, {"NCCL_DEBUG", "INFO"}};
  const auto rows = finalEnvironment(user, user, {}, {}, "NCCL_");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].value, "INFO");
  EXPECT_EQ(rows[0].source, "user");
}

TEST(UnifiedDiff, EqualTextsHaveNoHunks) {
  EXPECT_TRUE(unifiedDiff({"a", "b"}, {"a", "b"}, 2).empty());
}

TEST(UnifiedDiff, AddedLinesWithContextAndHeaders) {
  const std::vector<std::string> before = {"1", "2", "3", "4", "5", "6", "7", "8", "9"};
  const std::vector<std::string> after = {"1", "2", "x", "3", "4", "5", "6", "7", "8", "y", "9"};
  EXPECT_EQ(unifiedDiff(before, after, 1),
            (std::vector<std::string>{"@@ -2,2 +2,3 @@", " 2", "+x", " 3", "@@ -8,2 +9,3 @@", " 8",
                                      "+y", " 9"}));
  // Changes closer than twice the context share one hunk.
  EXPECT_EQ(unifiedDiff(before, after, 3).front(), "@@ -1,9 +1,11 @@");
}

TEST(UnifiedDiff, ReplacedLineShowsBothSides) {
  EXPECT_EQ(unifiedDiff({"a", "b", "c"}, {"a", "B", "c"}, 0),
            (std::vector<std::string>{"@@ -2,1 +2,1 @@", "-b", "+B"}));
}

TEST(FormatTable, ColumnsAlignOnTheWidestCellWithoutTrailingBlanks) {
  EXPECT_EQ(formatTable({"NAME", "V"}, {{"NCCL_IB_HCA", "=mlx5_1:1"}, {"X", ""}}, "  "),
            "  NAME         V\n"
            "  NCCL_IB_HCA  =mlx5_1:1\n"
            "  X\n");
}

TEST(SplitLines, KeepsEmptyLinesButNotTheLastNewline) {
  EXPECT_EQ(splitLines("a\n\nb\n"), (std::vector<std::string>{"a", "", "b"}));
}

// The golden slice the driver publishes for the A100 fixture (test/dra keeps it equal).
std::vector<SliceDevice> a100Slice() {
  return sliceDevices(nlohmann::json::parse(
      readTestFile(std::string(KUBE_RDMA_SOURCE_DIR) + "/test/dra/testdata/a100-roce.slice.json")));
}

TEST(SliceDevices, ReadsTheShownAttributesOfEveryDevice) {
  const std::vector<SliceDevice> devices = a100Slice();
  ASSERT_EQ(devices.size(), 8u);
  EXPECT_EQ(devices[0].name, "pci-0000-13-00-0-p1");
  EXPECT_EQ(devices[0].rdma_device, "mlx5_1");
  EXPECT_EQ(devices[0].netdev, "eth1");
  EXPECT_EQ(devices[0].link_layer, "Ethernet");
  EXPECT_EQ(devices[0].state, "ACTIVE");
  EXPECT_EQ(devices[0].pcie_root, "pci0000:00");
  EXPECT_EQ(devices[7].pcie_root, "pci0000:80");
}

TEST(RoceDevicesOnRoot, OnlyActiveEthernetPortsOfThatRootInSliceOrder) {
  std::vector<SliceDevice> devices = a100Slice();
  devices[4].state = "DOWN";
  devices[5].link_layer = "InfiniBand";
  std::vector<std::string> names;
  for (const SliceDevice& d : roceDevicesOnRoot(devices, "pci0000:80")) {
    names.push_back(d.rdma_device);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"mlx5_7", "mlx5_8"}));
  EXPECT_TRUE(roceDevicesOnRoot(devices, "pci0000:40").empty());
}

TEST(AllocatedClaim, TheTemplatesSpecWithTheSchedulersResults) {
  auto documents = parseYamlDocuments(
      readTestFile(std::string(KUBE_RDMA_SOURCE_DIR) + "/examples/dra/gpu-with-nic.yaml"));
  ASSERT_TRUE(documents.ok()) << documents.error().message;
  const nlohmann::json& claim_template = documents->at(0);
  ASSERT_EQ(claim_template["kind"], "ResourceClaimTemplate");
  const nlohmann::json claim = allocatedClaim(
      claim_template,
      {"nccl-one-gpu",
       "pod-uid",
       "gpu-nic",
       "a100-roce",
       {{"gpu", "gpu.nvidia.com", "gpu-4"}, {"nic", "rdma.kube-rdma.io", "pci-0000-93-00-0-p1"}}});
  EXPECT_EQ(claim["metadata"]["namespace"], "training");
  EXPECT_EQ(claim["metadata"]["name"].get<std::string>().rfind("nccl-one-gpu-gpu-nic-", 0), 0u);
  EXPECT_EQ(claim["metadata"]["ownerReferences"][0]["uid"], "pod-uid");
  EXPECT_EQ(claim["spec"], claim_template["spec"]["spec"]);
  EXPECT_EQ(claim["spec"]["devices"]["constraints"][0]["matchAttribute"],
            "resource.kubernetes.io/pcieRoot");
  const nlohmann::json& results = claim["status"]["allocation"]["devices"]["results"];
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1], (nlohmann::json{{"request", "nic"},
                                        {"driver", "rdma.kube-rdma.io"},
                                        {"pool", "a100-roce"},
                                        {"device", "pci-0000-93-00-0-p1"}}));
  EXPECT_EQ(claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]
                 ["values"][0],
            "a100-roce");
  EXPECT_EQ(claim["status"]["reservedFor"][0]["name"], "nccl-one-gpu");
}

// `steps` steps' tally after the steps of `script`, each the outcomes of its checks in order:
// '+' passed, '-' failed, 's' could not run.
StepTally tallied(int steps, const std::vector<std::string>& script) {
  StepTally tally(steps);
  for (const std::string& checks : script) {
    tally.begin();
    for (const char c : checks) {
      if (c == 's') {
        tally.skip();
      } else {
        tally.check(c == '+');
      }
    }
  }
  tally.end();
  return tally;
}

TEST(StepTally, EveryStepPassedIsAPass) {
  const StepTally tally = tallied(2, {"++", "+"});
  EXPECT_TRUE(tally.pass());
  EXPECT_EQ(tally.counts(), "2/2 steps");
}

// The demo without libnccl: step 6 ran its Allocate checks but not NCCL's reading of the
// nccl.conf, step 10 nothing but our own reading of the file. Neither may count as passed.
TEST(StepTally, AStepWithASkippedCheckIsSkippedNotPassed) {
  const StepTally tally = tallied(3, {"+", "+s+", "++s"});
  EXPECT_TRUE(tally.pass());
  EXPECT_EQ(tally.counts(), "1/3 steps, 2 skipped");
}

TEST(StepTally, AFailedCheckFailsItsStepWhateverWasSkipped) {
  const StepTally tally = tallied(2, {"s-", "+"});
  EXPECT_FALSE(tally.pass());
  EXPECT_EQ(tally.counts(), "1/2 steps");
}

TEST(StepTally, StepsNeverReachedAreAFailure) {
  const StepTally tally = tallied(3, {"+", "s"});
  EXPECT_FALSE(tally.pass());
  EXPECT_EQ(tally.counts(), "1/3 steps, 1 skipped");
}

TEST(StepTally, EndingTwiceCountsTheStepOnce) {
  StepTally tally = tallied(1, {"s"});
  tally.end();
  EXPECT_EQ(tally.counts(), "0/1 steps, 1 skipped");
}

} // namespace
} // namespace kube_rdma
