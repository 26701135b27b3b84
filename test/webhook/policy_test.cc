#include "webhook/policy.h"

#include <gtest/gtest.h>

namespace kube_rdma {
namespace {

TEST(WebhookPolicy, EmptyDocumentGivesTheDocumentedDefaults) {
  Result<WebhookPolicy> policy = parseWebhookPolicy("{}");
  ASSERT_TRUE(policy.ok()) << policy.error().message;
  EXPECT_EQ(policy->resources, (std::vector<std::string>{"rdma/hca", "rdma/shared"}));
  EXPECT_TRUE(policy->ipc_lock);
  EXPECT_TRUE(policy->shm);
  EXPECT_EQ(policy->shm_size_limit, "16Gi");
  EXPECT_EQ(policy->env, (std::vector<PolicyEnvVar>{{"NCCL_IB_DISABLE", "0"},
                                                    {"NCCL_IB_TIMEOUT", "22"},
                                                    {"NCCL_IB_QPS_PER_CONNECTION", "8"}}));
  EXPECT_EQ(policy->pod_network_socket_ifname, "eth0");
  EXPECT_EQ(policy->env_from, EnvFromMode::kSkip);
  EXPECT_EQ(policy->shorthand.by_type.at("roce"), "rdma/shared");
  EXPECT_EQ(policy->shorthand.untyped, "rdma/hca");
  EXPECT_FALSE(policy->shorthand_namespaces); // every namespace the webhook acts on
  EXPECT_TRUE(policy->profiles.empty());
  EXPECT_TRUE(policy->annotations.empty());
  EXPECT_TRUE(policy->include_namespaces.empty());
  EXPECT_EQ(policy->exclude_namespaces,
            (std::vector<std::string>{"kube-system", "kube-public", "kube-node-lease"}));
}

TEST(WebhookPolicy, ReadsEveryKey) {
  Result<WebhookPolicy> policy = parseWebhookPolicy(R"({
    "resources": ["example.com/ib", "example.com/roce"],
    "shorthand": {"types": {"ib": "example.com/ib", "roce": "example.com/roce"},
                  "untyped": "example.com/roce", "namespaces": ["training"]},
    "namespaces": {"include": ["training"], "exclude": ["kube-system"]},
    "ipcLock": false,
    "cdi": true,
    "draDeviceClasses": ["nics.example.com"],
    "shm": {"enabled": false, "sizeLimit": "64Gi"},
    "env": [{"name": "NCCL_DEBUG", "value": "WARN"}],
    "podNetworkSocketIfname": "",
    "envFrom": "add",
    "profiles": [{"name": "h100", "nodeSelector": {"pool": "h100"},
                  "env": [{"name": "NCCL_IB_SL", "value": "3"}], "shmSizeLimit": "128Gi"}],
    "annotations": {"sidecar.istio.io/inject": "false"}
  })");
  ASSERT_TRUE(policy.ok()) << policy.error().message;
  EXPECT_EQ(policy->resources, (std::vector<std::string>{"example.com/ib", "example.com/roce"}));
  EXPECT_EQ(policy->shorthand.untyped, "example.com/roce");
  EXPECT_EQ(policy->shorthand_namespaces, std::vector<std::string>{"training"});
  EXPECT_EQ(policy->include_namespaces, std::vector<std::string>{"training"});
  EXPECT_FALSE(policy->ipc_lock);
  EXPECT_TRUE(policy->cdi);
  EXPECT_EQ(policy->dra_device_classes, std::vector<std::string>{"nics.example.com"});
  EXPECT_FALSE(policy->shm);
  EXPECT_EQ(policy->shm_size_limit, "64Gi");
  EXPECT_EQ(policy->env, (std::vector<PolicyEnvVar>{{"NCCL_DEBUG", "WARN"}}));
  EXPECT_EQ(policy->pod_network_socket_ifname, "");
  EXPECT_EQ(policy->env_from, EnvFromMode::kAdd);
  ASSERT_EQ(policy->profiles.size(), 1u);
  EXPECT_EQ(policy->profiles[0].name, "h100");
  EXPECT_EQ(policy->profiles[0].node_selector.at("pool"), "h100");
  EXPECT_EQ(policy->profiles[0].env, (std::vector<PolicyEnvVar>{{"NCCL_IB_SL", "3"}}));
  EXPECT_EQ(policy->profiles[0].shm_size_limit, "128Gi");
  EXPECT_EQ(policy->annotations.at("sidecar.istio.io/inject"), "false");
}

struct BadPolicy {
  std::string description;
  std::string text;
  std::string message_part; // the JSON path and the problem
};

class WebhookPolicyBad : public testing::TestWithParam<BadPolicy> {};

TEST_P(WebhookPolicyBad, IsRejectedWithThePathOfTheProblem) {
  Result<WebhookPolicy> policy = parseWebhookPolicy(GetParam().text);
  ASSERT_FALSE(policy.ok());
  EXPECT_NE(policy.error().message.find(GetParam().message_part), std::string::npos)
      << policy.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Errors, WebhookPolicyBad,
    testing::Values(
        BadPolicy{"not_json", "{", "policy"},
        BadPolicy{"unknown_key", R"({"ipcLocks": true})", "$.ipcLocks"},
        BadPolicy{"wrong_type", R"({"ipcLock": "yes"})", "$.ipcLock"},
        BadPolicy{"cdi_not_bool", R"({"cdi": "containerd"})", "$.cdi"},
        BadPolicy{"dra_class_not_a_name", R"({"draDeviceClasses": ["RDMA_nics"]})",
                  "$.draDeviceClasses: \"RDMA_nics\" is not a DeviceClass name"},
        BadPolicy{"dra_class_twice", R"({"draDeviceClasses": ["a.b", "a.b"]})",
                  "$.draDeviceClasses: \"a.b\" is listed twice"},
        BadPolicy{"no_resources", R"({"resources": []})", "$.resources: must name"},
        BadPolicy{"bare_resource", R"({"resources": ["hca"]})", "$.resources: \"hca\""},
        BadPolicy{"upper_case_domain", R"({"resources": ["RDMA/hca"]})",
                  "$.resources: \"RDMA/hca\": domain \"RDMA\" must be a lower-case DNS"},
        BadPolicy{"reserved_domain", R"({"resources": ["kubernetes.io/hca"]})", "reserved"},
        BadPolicy{"bad_name_part", R"({"resources": ["rdma/-hca"]})", "name \"-hca\" must be"},
        BadPolicy{"two_slashes", R"({"resources": ["rdma/hca/x"]})", "one \"domain/name\""},
        BadPolicy{"duplicate_resource", R"({"resources": ["a/b", "a/b"]})", "listed twice"},
        BadPolicy{"shorthand_to_unknown", R"({"shorthand": {"types": {"ib": "x/y"}}})",
                  "$.shorthand.types: type \"ib\" maps to \"x/y\""},
        BadPolicy{"shorthand_upper", R"({"shorthand": {"types": {"IB": "rdma/hca"}}})",
                  "lower-case"},
        BadPolicy{"untyped_unknown", R"({"resources": ["x/y"]})", "$.shorthand.untyped"},
        BadPolicy{"shorthand_namespaces_not_a_list", R"({"shorthand": {"namespaces": "ml"}})",
                  "$.shorthand.namespaces"},
        BadPolicy{"shorthand_namespace_empty", R"({"shorthand": {"namespaces": [""]}})",
                  "$.shorthand.namespaces: a namespace name must not be empty"},
        BadPolicy{"shorthand_namespace_twice", R"({"shorthand": {"namespaces": ["a", "a"]}})",
                  "$.shorthand.namespaces: \"a\" is listed twice"},
        BadPolicy{"include_and_exclude", R"({"namespaces": {"include": ["a"], "exclude": ["a"]}})",
                  "$.namespaces.include: \"a\" is both"},
        BadPolicy{"bad_quantity", R"({"shm": {"sizeLimit": "lots"}})", "$.shm.sizeLimit"},
        BadPolicy{"zero_quantity", R"({"shm": {"sizeLimit": "0"}})", "above zero"},
        BadPolicy{"env_twice",
                  R"({"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]})",
                  "$.env[1].name"},
        BadPolicy{"env_no_value", R"({"env": [{"name": "A"}]})", "$.env[0].value"},
        BadPolicy{"env_unknown_key", R"({"env": [{"name": "A", "value": "1", "from": 2}]})",
                  "$.env[0].from"},
        BadPolicy{"env_from_enum", R"({"envFrom": "merge"})", "$.envFrom"},
        BadPolicy{"one_char_ifname", R"({"podNetworkSocketIfname": "e"})",
                  "$.podNetworkSocketIfname"},
        BadPolicy{"profile_no_selector", R"({"profiles": [{"name": "a", "nodeSelector": {}}]})",
                  "$.profiles[0].nodeSelector"},
        BadPolicy{"profile_twice",
                  R"({"profiles": [{"name": "a", "nodeSelector": {"k": "v"}},
                                   {"name": "a", "nodeSelector": {"k": "w"}}]})",
                  "$.profiles[1].name"},
        BadPolicy{"profile_bad_shm",
                  R"({"profiles": [{"name": "a", "nodeSelector": {"k": "v"},
                                    "shmSizeLimit": "1x"}]})",
                  "$.profiles[0].shmSizeLimit"},
        BadPolicy{"own_annotation", R"({"annotations": {"kube-rdma.io/injected": "x"}})",
                  "$.annotations"}),
    [](const auto& info) { return info.param.description; });

struct QuantityCase {
  std::string text;
  double value;
};

class QuantityGood : public testing::TestWithParam<QuantityCase> {};

TEST_P(QuantityGood, ParsesToBaseUnits) {
  Result<double> got = parseQuantity(GetParam().text);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_DOUBLE_EQ(*got, GetParam().value);
}

INSTANTIATE_TEST_SUITE_P(Forms, QuantityGood,
                         testing::Values(QuantityCase{"16Gi", 16.0 * 1024 * 1024 * 1024},
                                         QuantityCase{"1.5Ki", 1536}, QuantityCase{"500M", 5e8},
                                         QuantityCase{"1e3", 1000}, QuantityCase{"2E-1", 0.2},
                                         QuantityCase{"100m", 0.1}, QuantityCase{"42", 42},
                                         QuantityCase{"+1k", 1000}));

TEST(Quantity, RejectsWhatKubernetesRejects) {
  for (const char* bad : {"", "Gi", "1GB", "1.2.3", "-1", "1 Gi", "1e", "1e1000", "abc"}) {
    EXPECT_FALSE(parseQuantity(bad).ok()) << bad;
  }
}

TEST(WebhookPolicy, ResourcesOutsideTheShippedPrefixAreReportedAsNeverSent) {
  EXPECT_TRUE(resourcesNeverSent(defaultWebhookPolicy()).empty());
  auto policy = parseWebhookPolicy(
      R"({"resources": ["rdma/hca", "example.com/roce", "rdma/shared", "nvidia.com/hca"]})");
  ASSERT_TRUE(policy.ok()) << policy.error().message;
  EXPECT_EQ(resourcesNeverSent(*policy),
            (std::vector<std::string>{"example.com/roce", "nvidia.com/hca"}));
}

} // namespace
} // namespace kube_rdma
