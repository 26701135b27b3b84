// Table tests over real-world pods: testdata/pods/X.json is a pod as the API server sends it in
// request.object, X.expected.json the pod after our patch plus the warnings and what was applied,
// X.policy.json (optional) the policy. UPDATE_GOLDEN=1 rewrites the expected files (review them).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "test/webhook/admission_test_support.h"
#include "webhook/mutator.h"
#include "webhook/review.h"

namespace kube_rdma {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const fs::path kPods = fs::path(KUBE_RDMA_WEBHOOK_TESTDATA) / "pods";

json readJson(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

std::string readText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> caseNames() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kPods)) {
    const std::string file = entry.path().filename().string();
    if (endsWith(file, ".json") && !endsWith(file, ".expected.json") &&
        !endsWith(file, ".policy.json")) {
      names.push_back(file.substr(0, file.size() - 5));
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

WebhookPolicy policyFor(const std::string& name) {
  const fs::path path = kPods / (name + ".policy.json");
  if (!fs::exists(path)) {
    return defaultWebhookPolicy();
  }
  Result<WebhookPolicy> policy = parseWebhookPolicy(readText(path));
  EXPECT_TRUE(policy.ok()) << path << ": " << policy.error().message;
  return policy.ok() ? *policy : defaultWebhookPolicy();
}

// A replace or remove must name a path of the original document: the API server's patcher fails
// (and ignores failurePolicy) otherwise.
void expectOpsTargetExistingPaths(const json& pod, const json& patch) {
  for (const json& op : patch) {
    const std::string kind = op.at("op");
    EXPECT_TRUE(kind == "add" || kind == "replace") << op.dump();
    if (kind == "replace") {
      EXPECT_TRUE(pod.contains(json::json_pointer(op.at("path").get<std::string>()))) << op.dump();
    }
  }
}

class MutatorGolden : public testing::TestWithParam<std::string> {};

TEST_P(MutatorGolden, PatchAppliesMatchesExpectedAndIsIdempotent) {
  const std::string name = GetParam();
  const json pod = readJson(kPods / (name + ".json"));
  const WebhookPolicy policy = policyFor(name);

  test_support::JsonMutation result = test_support::mutateJsonPod(pod, "training", policy);
  expectOpsTargetExistingPaths(pod, result.patch);
  json patched;
  ASSERT_NO_THROW(patched = pod.patch(result.patch)) << result.patch.dump(2);

  const json got = {{"pod", patched},
                    {"warnings", result.warnings},
                    {"applied", result.applied},
                    {"skipped", result.skipped}};
  const fs::path expected_path = kPods / (name + ".expected.json");
  if (std::getenv("UPDATE_GOLDEN") != nullptr) {
    std::ofstream(expected_path) << got.dump(2) << "\n";
  }
  ASSERT_TRUE(fs::exists(expected_path))
      << "no " << expected_path << " (UPDATE_GOLDEN=1 writes it)";
  const json expected = readJson(expected_path);
  // Field by field: the diff names every path that differs.
  EXPECT_EQ(json::diff(expected, got), json::array()) << "differences from " << expected_path;

  test_support::JsonMutation second = test_support::mutateJsonPod(patched, "training", policy);
  EXPECT_EQ(second.patch, json::array()) << "second pass changed the pod: " << second.patch.dump();
  EXPECT_TRUE(second.applied.empty());

  // The webhook decodes only the members of a pod the mutator reads: the same answer.
  const ReviewOutcome review =
      reviewAdmission(test_support::podCreateReview(pod, "uid").dump(), policy);
  ASSERT_EQ(review.http_status, 200) << review.body;
  const json response = json::parse(review.body).at("response");
  const json patch = response.contains("patch")
                         ? json::parse(*test_support::decodeBase64(response.at("patch")))
                         : json::array();
  EXPECT_EQ(patch, result.patch);
  EXPECT_EQ(review.warnings, result.warnings);
  EXPECT_EQ(review.applied, result.applied);
}

INSTANTIATE_TEST_SUITE_P(Pods, MutatorGolden, testing::ValuesIn(caseNames()), [](const auto& info) {
  std::string id = info.param;
  std::replace(id.begin(), id.end(), '-', '_');
  return id;
});

TEST(MutatorGoldenFiles, EveryExpectedAndPolicyFileHasItsPod) {
  const std::vector<std::string> names = caseNames();
  const std::set<std::string> known(names.begin(), names.end());
  ASSERT_FALSE(names.empty());
  for (const auto& entry : fs::directory_iterator(kPods)) {
    std::string file = entry.path().filename().string();
    for (const std::string suffix : {".expected.json", ".policy.json"}) {
      if (endsWith(file, suffix)) {
        EXPECT_TRUE(known.count(file.substr(0, file.size() - suffix.size())) == 1)
            << file << " belongs to no pod";
      }
    }
  }
}

} // namespace
} // namespace kube_rdma
