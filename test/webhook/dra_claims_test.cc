// Pods that get their NICs through Dynamic Resource Allocation: which containers are RDMA
// containers, from the claims and claim templates as the API server returns them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test/webhook/admission_test_support.h"
#include "webhook/dra_claims.h"
#include "webhook/mutator.h"
#include "webhook/review.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

const std::filesystem::path kDra = std::filesystem::path(KUBE_RDMA_WEBHOOK_TESTDATA) / "dra";

json readJson(const std::string& file) {
  std::ifstream in(kDra / file);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

const std::string kUid = "a7c4f1e2-0d3b-4c59-8e6a-1f2b3c4d5e6f";
const std::vector<std::string> kClasses = defaultWebhookPolicy().dra_device_classes;

// The claims of the test pod's namespace as an API server holds them.
class ApiObjects {
public:
  // The ResourceClaimSpec behind `source`, as the webhook's reader answers.
  Result<std::vector<ClaimRequest>> read(const std::string& ns, const PodClaimSource& source) {
    reads_.push_back(ns + "/" + source.claim_name + source.template_name);
    if (ns != "training") {
      return makeError("not found");
    }
    if (source.template_name == "gpu-and-nic") {
      return claimRequests(readJson("gpu-and-nic.template.json")["spec"]["spec"]);
    }
    if (source.claim_name == "shared-nics") {
      return claimRequests(readJson("shared-nics.claim.json")["spec"]);
    }
    return makeError("resourceclaims.resource.k8s.io \"" + source.claim_name + "\" not found");
  }
  ClaimSpecLookup lookup() {
    return [this](const std::string& ns, const PodClaimSource& source) { return read(ns, source); };
  }
  const std::vector<std::string>& reads() const { return reads_; }

private:
  std::vector<std::string> reads_;
};

// The pod after the reply's patch, applied by nlohmann-json's RFC 6902 implementation.
json patched(const json& pod, const ReviewOutcome& outcome) {
  const json reply = json::parse(outcome.body);
  const json& response = reply["response"];
  if (!response.contains("patch")) {
    return pod;
  }
  return pod.patch(json::parse(test_support::decodeBase64(response["patch"]).value()));
}

bool hasIpcLock(const json& container) {
  const json add = container.value("/securityContext/capabilities/add"_json_pointer, json::array());
  return std::find(add.begin(), add.end(), "IPC_LOCK") != add.end();
}

TEST(DraClaims, ClaimRequestsAreReadWithTheClassesThatMayServeThem) {
  const std::vector<ClaimRequest> requests =
      claimRequests(readJson("shared-nics.claim.json")["spec"]);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].name, "nics");
  EXPECT_EQ(requests[0].device_classes,
            (std::vector<std::string>{"roce.rdma.kube-rdma.io", "ib.rdma.kube-rdma.io"}));
  EXPECT_EQ(requests[1].device_classes,
            (std::vector<std::string>{"rdma.kube-rdma.io", "gpu.nvidia.com"}));
  EXPECT_TRUE(claimRequests(json::object()).empty());
  EXPECT_TRUE(claimRequests(json::parse(R"({"devices": {"requests": 3}})")).empty());
  // A request of another shape is kept, with no class that could make it RDMA.
  const std::vector<ClaimRequest> odd =
      claimRequests(json::parse(R"({"devices": {"requests": [{"name": "a", "exactly": 7},
                                                              {"name": "b", "firstAvailable": {}}]}})"));
  ASSERT_EQ(odd.size(), 2u);
  EXPECT_EQ(odd[0].device_classes, (std::vector<std::string>{""}));
  EXPECT_TRUE(odd[1].device_classes.empty());
  EXPECT_TRUE(rdmaRequestNames(odd, kClasses).empty());
}

TEST(DraClaims, RequestsOfTheRdmaClassesAreRdmaRequests) {
  const std::vector<ClaimRequest> from_template =
      claimRequests(readJson("gpu-and-nic.template.json")["spec"]["spec"]);
  EXPECT_EQ(rdmaRequestNames(from_template, kClasses), (std::set<std::string>{"nic"}));
  // "nics" has only RDMA alternatives; "nic-or-gpu" may be met by a GPU.
  EXPECT_EQ(rdmaRequestNames(claimRequests(readJson("shared-nics.claim.json")["spec"]), kClasses),
            (std::set<std::string>{"nics"}));
  EXPECT_TRUE(rdmaRequestNames(from_template, {"gpu.nvidia.com"}).contains("gpu"));
  EXPECT_TRUE(rdmaRequestNames({{"", {"rdma.kube-rdma.io"}}}, kClasses).empty()); // no name
}

TEST(DraClaims, PodClaimSourcesNameAClaimOrATemplate) {
  json pod = readJson("trainer.pod.json");
  pod["spec"]["resourceClaims"].push_back({{"name", "neither"}});
  const std::vector<PodClaimSource> sources = podClaimSources(test_support::ParsedJson(pod).root());
  ASSERT_EQ(sources.size(), 2u);
  EXPECT_EQ(sources[0].name, "gpu-nic");
  EXPECT_EQ(sources[0].template_name, "gpu-and-nic");
  EXPECT_EQ(sources[1].claim_name, "shared-nics");
  EXPECT_TRUE(
      podClaimSources(
          test_support::ParsedJson(json::parse(R"({"spec": {"resourceClaims": {}}})")).root())
          .empty());
}

TEST(DraClaims, AContainerUsesAnRdmaRequestWholeOrByName) {
  const PodRdmaClaims claims = {{"gpu-nic", {"nic"}}, {"nics", {"nics"}}, {"gpus", {}}};
  const auto uses = [&claims](const char* container) {
    return usesRdmaClaim(test_support::ParsedJson(json::parse(container)).root(), claims);
  };
  EXPECT_TRUE(uses(R"({"resources": {"claims": [{"name": "gpu-nic"}]}})"));
  EXPECT_TRUE(uses(R"({"resources": {"claims": [{"name": "gpu-nic", "request": "nic"}]}})"));
  EXPECT_TRUE(uses(R"({"resources": {"claims": [{"name": "nics", "request": "nics/roce"}]}})"));
  EXPECT_FALSE(uses(R"({"resources": {"claims": [{"name": "gpu-nic", "request": "gpu"}]}})"));
  EXPECT_FALSE(uses(R"({"resources": {"claims": [{"name": "gpus"}]}})"));
  EXPECT_FALSE(uses(R"({"resources": {"claims": [{"name": "unknown"}]}})"));
  EXPECT_FALSE(uses(R"({"name": "no-claims"})"));
}

TEST(DraClaims, ContainersUsingRdmaClaimsGetWhatRdmaContainersGet) {
  const json pod = readJson("trainer.pod.json");
  ApiObjects api;
  const ReviewOutcome outcome = reviewAdmission(test_support::podCreateReview(pod, kUid).dump(),
                                                defaultWebhookPolicy(), api.lookup());
  ASSERT_EQ(outcome.http_status, 200) << outcome.body;
  EXPECT_EQ(outcome.outcome, "mutated");
  EXPECT_TRUE(outcome.warnings.empty()) << outcome.warnings.front();
  EXPECT_EQ(api.reads(),
            (std::vector<std::string>{"training/gpu-and-nic", "training/shared-nics"}));

  const json after = patched(pod, outcome);
  const json& containers = after["spec"]["containers"];
  EXPECT_TRUE(hasIpcLock(containers[0])) << containers[0].dump();
  EXPECT_FALSE(hasIpcLock(containers[1])) << "uses the GPU request only";
  EXPECT_TRUE(hasIpcLock(containers[2])) << containers[2].dump();
  EXPECT_FALSE(hasIpcLock(containers[3]));
  EXPECT_TRUE(containers[0].contains("volumeMounts"));
}

TEST(DraClaims, AClaimThatCannotBeReadLeavesItsContainersAloneWithAWarning) {
  json pod = readJson("trainer.pod.json");
  pod["spec"]["resourceClaims"][1]["resourceClaimName"] = "gone";
  ApiObjects api;
  const ReviewOutcome outcome = reviewAdmission(test_support::podCreateReview(pod, kUid).dump(),
                                                defaultWebhookPolicy(), api.lookup());
  ASSERT_EQ(outcome.warnings.size(), 1u);
  EXPECT_EQ(outcome.warnings[0],
            "ResourceClaim gone not read: resourceclaims.resource.k8s.io \"gone\" not found");
  const json after = patched(pod, outcome);
  EXPECT_TRUE(hasIpcLock(after["spec"]["containers"][0])) << "its claim was read";
  EXPECT_FALSE(hasIpcLock(after["spec"]["containers"][2]));
}

TEST(DraClaims, WithoutApiAccessAClaimPodIsAdmittedUnchangedWithAWarning) {
  const json pod = readJson("trainer.pod.json");
  const ReviewOutcome outcome =
      reviewAdmission(test_support::podCreateReview(pod, kUid).dump(), defaultWebhookPolicy());
  EXPECT_EQ(outcome.outcome, "unchanged");
  ASSERT_EQ(outcome.warnings.size(), 2u);
  EXPECT_EQ(outcome.warnings[0], "claim gpu-nic not checked for RDMA: no API access");
  EXPECT_EQ(patched(pod, outcome), pod);
}

TEST(DraClaims, NoClassesOrASkippedPodReadsNoClaim) {
  const json pod = readJson("trainer.pod.json");
  ApiObjects api;
  WebhookPolicy no_dra = defaultWebhookPolicy();
  no_dra.dra_device_classes.clear();
  EXPECT_EQ(reviewAdmission(test_support::podCreateReview(pod, kUid).dump(), no_dra, api.lookup())
                .outcome,
            "unchanged");
  json opted_out = pod;
  opted_out["metadata"]["annotations"] = {{kInjectAnnotation, "false"}};
  EXPECT_EQ(reviewAdmission(test_support::podCreateReview(opted_out, kUid).dump(),
                            defaultWebhookPolicy(), api.lookup())
                .outcome,
            "skipped");
  EXPECT_TRUE(api.reads().empty());
}

} // namespace
} // namespace kube_rdma
