#include "webhook/pod_facts.h"

#include <gtest/gtest.h>

#include "test/webhook/admission_test_support.h"

namespace kube_rdma {
namespace {

using nlohmann::json;
using test_support::ParsedJson;

json withMemory(const char* limit) {
  return {{"resources", {{"limits", {{"memory", limit}}}}}};
}

TEST(PodMemoryLimit, SumsRegularContainersAndNativeSidecarsOnly) {
  json sidecar = withMemory("1Gi");
  sidecar["restartPolicy"] = "Always";
  const json spec = {{"initContainers", {withMemory("64Gi"), sidecar}},
                     {"containers", {withMemory("2Gi"), withMemory("1Gi")}}};
  EXPECT_EQ(podMemoryLimit(ParsedJson(spec).root()), 4.0 * 1024 * 1024 * 1024);
}

TEST(PodMemoryLimit, NoneWhenAContainerHasNoLimit) {
  const json spec = {{"containers", {withMemory("2Gi"), json::object()}}};
  EXPECT_EQ(podMemoryLimit(ParsedJson(spec).root()), std::nullopt);
}

TEST(RunsAsNonRoot, TheContainerSettingWinsOverThePods) {
  const json spec = {{"securityContext", {{"runAsUser", 1000}}}};
  const json as_root = {{"securityContext", {{"runAsUser", 0}, {"runAsNonRoot", true}}}};
  const ParsedJson parsed_spec(spec);
  EXPECT_TRUE(runsAsNonRoot(parsed_spec.root(), ParsedJson(json::object()).root()));
  EXPECT_FALSE(runsAsNonRoot(parsed_spec.root(), ParsedJson(as_root).root()));
  EXPECT_TRUE(
      runsAsNonRoot(ParsedJson(json::object()).root(),
                    ParsedJson(json{{"securityContext", {{"runAsNonRoot", true}}}}).root()));
}

TEST(DecidesIpcLock, GrantedOrDroppedOnPurpose) {
  for (const json& context :
       {json{{"privileged", true}}, json{{"capabilities", {{"drop", {"ALL"}}}}},
        json{{"capabilities", {{"add", {"CAP_IPC_LOCK"}}}}}}) {
    EXPECT_TRUE(decidesIpcLock(ParsedJson(json{{"securityContext", context}}).root())) << context;
  }
  EXPECT_FALSE(decidesIpcLock(
      ParsedJson(json{{"securityContext", {{"capabilities", {{"add", {"NET_ADMIN"}}}}}}}).root()));
}

TEST(PickProfile, EveryRequiredAffinityTermMustPinTheLabel) {
  WebhookPolicy policy;
  policy.profiles.push_back({});
  policy.profiles.back().name = "h100";
  policy.profiles.back().node_selector = {{"pool", "h100"}};
  const json pinned = {{"key", "pool"}, {"operator", "In"}, {"values", {"h100"}}};
  const json either = {{"key", "pool"}, {"operator", "In"}, {"values", {"h100", "a100"}}};
  const auto specWithTerms = [](const json& terms) {
    return json{
        {"affinity",
         {{"nodeAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}}}};
  };
  const json one_term = specWithTerms({{{"matchExpressions", {pinned}}}});
  const json two_terms =
      specWithTerms({{{"matchExpressions", {pinned}}}, {{"matchExpressions", {either}}}});
  const NodePoolProfile* picked = pickProfile(ParsedJson(one_term).root(), policy);
  ASSERT_NE(picked, nullptr);
  EXPECT_EQ(picked->name, "h100");
  EXPECT_EQ(pickProfile(ParsedJson(two_terms).root(), policy), nullptr);
}

} // namespace
} // namespace kube_rdma
