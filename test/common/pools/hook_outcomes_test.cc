// The hook's outcome counts (common/pools/hook_outcomes.h) and the pod it names
// (parseContainerSpec), without running the hook.

#include <gtest/gtest.h>

#include <string>

#include "common/pools/hook_outcomes.h"
#include "common/pools/oci_hook.h"
#include "test/plugin/temp_dir.h"
#include "test/plugin/test_files.h"

namespace kube_rdma {
namespace {

TEST(HookOutcomeCounts, ParseAndRenderAreInverses) {
  auto counts =
      parseHookOutcomeCounts("own-gid-index 12\n\nno-own-gid 0\nerror 18446744073709551615\n");
  ASSERT_TRUE(counts.ok()) << counts.error().message;
  EXPECT_EQ(*counts,
            (HookOutcomeCounts{
                {"error", 18446744073709551615u}, {"no-own-gid", 0}, {"own-gid-index", 12}}));
  EXPECT_EQ(renderHookOutcomeCounts(*counts),
            "error 18446744073709551615\nno-own-gid 0\nown-gid-index 12\n");
}

TEST(HookOutcomeCounts, ABadLineIsNamed) {
  for (const auto& [text, message] : {
           std::pair{"own-gid-index\n", "line 1 is not \"OUTCOME COUNT\": \"own-gid-index\""},
           std::pair{"a 1\nb -1\n", "line 2 is not \"OUTCOME COUNT\": \"b -1\""},
           std::pair{"a 1 2\n", "line 1 is not \"OUTCOME COUNT\": \"a 1 2\""},
           std::pair{"a 18446744073709551616\n",
                     "line 1 is not \"OUTCOME COUNT\": \"a 18446744073709551616\""},
       }) {
    auto counts = parseHookOutcomeCounts(text);
    ASSERT_FALSE(counts.ok()) << text;
    EXPECT_EQ(counts.error().message, message);
  }
}

TEST(HookOutcomeFamily, EveryOutcomeFromZeroBeforeTheFirstContainer) {
  TempDir dir;
  auto family = hookOutcomeFamily(dir.path() + "/nccl-hook.log.counts");
  ASSERT_TRUE(family.ok()) << family.error().message;
  EXPECT_EQ(family->name, "kube_rdma_nccl_hook_containers_total");
  EXPECT_EQ(family->type, MetricType::kCounter);
  ASSERT_EQ(family->samples.size(), kNcclHookOutcomeNames.size());
  for (const auto& [labels, value] : family->samples) {
    EXPECT_EQ(value, 0.0) << labels.at("outcome");
  }
}

TEST(HookOutcomeFamily, CountsWhatTheHooksCounted) {
  TempDir dir;
  const std::string path = dir.path() + "/counts";
  ASSERT_TRUE(countHookOutcome(path, NcclHookOutcome::kPortsDisagree).ok());
  ASSERT_TRUE(countHookOutcome(path, NcclHookOutcome::kPortsDisagree).ok());
  ASSERT_TRUE(countHookOutcome(path, NcclHookOutcome::kOwnGidIndex).ok());
  writeTestFile(path, readTestFile(path) + "from-a-newer-hook 4\n");
  auto family = hookOutcomeFamily(path);
  ASSERT_TRUE(family.ok()) << family.error().message;
  std::map<std::string, double> values;
  for (const auto& [labels, value] : family->samples) {
    values[labels.at("outcome")] = value;
  }
  EXPECT_EQ(values.size(), kNcclHookOutcomeNames.size() + 1);
  EXPECT_EQ(values["ports-disagree"], 2.0);
  EXPECT_EQ(values["own-gid-index"], 1.0);
  EXPECT_EQ(values["from-a-newer-hook"], 4.0);
  EXPECT_EQ(values["error"], 0.0);
}

TEST(HookOutcomeFamily, ABrokenFileIsAnErrorNamingIt) {
  TempDir dir;
  const std::string path = dir.path() + "/counts";
  writeTestFile(path, "own-gid-index x\n");
  auto family = hookOutcomeFamily(path);
  ASSERT_FALSE(family.ok());
  EXPECT_EQ(family.error().message, "cannot read the hook's counts " + path +
                                        ": line 1 is not \"OUTCOME COUNT\": \"own-gid-index x\"");
  auto directory = hookOutcomeFamily(dir.path());
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.error().message.find("cannot read the hook's counts " + dir.path()),
            std::string::npos)
      << directory.error().message;
}

TEST(ContainerSpecPod, NamedByContainerdOrCriO) {
  const auto pod = [](const char* annotations) {
    auto spec = parseContainerSpec(
        std::string(R"({"root":{"path":"/r"},"annotations":)") + annotations + "}", "/b");
    EXPECT_TRUE(spec.ok()) << spec.error().message;
    return spec.ok() ? spec->pod : "?";
  };
  EXPECT_EQ(pod(R"({"io.kubernetes.cri.sandbox-namespace":"training",
                    "io.kubernetes.cri.sandbox-name":"worker-0"})"),
            "training/worker-0");
  EXPECT_EQ(pod(R"({"io.kubernetes.pod.namespace":"training","io.kubernetes.pod.name":"w-1"})"),
            "training/w-1");
  // Half a name is none; so is a runtime without the CRI's annotations (podman).
  EXPECT_EQ(pod(R"({"io.kubernetes.cri.sandbox-namespace":"training"})"), "");
  EXPECT_EQ(pod(R"({"io.kubernetes.cri.sandbox-name":7})"), "");
  EXPECT_EQ(pod("[]"), "");
}

TEST(ContainerSpecPod, ReadsTheNriPluginsGidIndexAnnotation) {
  auto spec = parseContainerSpec(
      R"({"root":{"path":"/r"},"annotations":{"rdma.kube-rdma.io/nri-nccl-ib-gid-index":"7"}})",
      "/b");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->nri_gid_index, "7");
}

} // namespace
} // namespace kube_rdma
