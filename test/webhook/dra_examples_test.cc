// The pods of examples/dra/*.yaml as written, through the webhook: each pod as the API server
// sends it (a workload's pod template made a pod), its ResourceClaims and ResourceClaimTemplates
// served by the API-server simulator, the reply's JSON Patch applied with nlohmann-json's RFC 6902
// implementation. The policy is the manifests' (manifests/base/webhook/policy.json) and its DRA
// device classes must be the DeviceClasses manifests/components/dra defines.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "common/util/clock.h"
#include "webhook/policy.h"
#include "test/apiserver/simulated_api.h"
#include "test/plugin/test_files.h"
#include "test/webhook/admission_test_support.h"
#include "test/yaml_documents.h"
#include "webhook/claim_cache.h"
#include "webhook/review.h"

namespace kube_rdma {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSource = KUBE_RDMA_SOURCE_DIR;

std::vector<json> yamlFile(const fs::path& path) {
  auto documents = parseYamlDocuments(readTestFile(path));
  EXPECT_TRUE(documents.ok()) << path << ": " << documents.error().message;
  return documents.ok() ? *documents : std::vector<json>{};
}

// The pod templates of a workload: a Deployment's (apps/v1, batch/v1 alike) or each replica
// type's of a PyTorchJob, as (pod name suffix, template).
std::vector<std::pair<std::string, json>> podTemplates(const json& object) {
  if (const json* t = object.contains("spec") && object["spec"].contains("template")
                          ? &object["spec"]["template"]
                          : nullptr) {
    return {{"7d9f8c6b5-x2k4q", *t}};
  }
  std::vector<std::pair<std::string, json>> templates;
  const json replica_specs = object.value("/spec/pytorchReplicaSpecs"_json_pointer, json::object());
  for (const auto& [role, spec] : replica_specs.items()) {
    std::string lower = role;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    templates.emplace_back(lower + "-0", spec["template"]);
  }
  return templates;
}

// Every pod the examples make, as the API server sends it to admission: a Pod as written; a
// workload's pod template as its controller creates the pod (name, the workload's namespace,
// the template's labels and spec).
std::vector<json> examplePods(const std::vector<json>& objects) {
  std::vector<json> pods;
  for (const json& object : objects) {
    if (object["kind"] == "Pod") {
      pods.push_back(object);
      continue;
    }
    for (const auto& [suffix, pod_template] : podTemplates(object)) {
      json pod = {{"apiVersion", "v1"},
                  {"kind", "Pod"},
                  {"metadata",
                   {{"name", object["metadata"]["name"].get<std::string>() + "-" + suffix},
                    {"namespace", object["metadata"]["namespace"]}}},
                  {"spec", pod_template["spec"]}};
      if (const json labels = pod_template.value("/metadata/labels"_json_pointer, json());
          !labels.is_null()) {
        pod["metadata"]["labels"] = labels;
      }
      pods.push_back(std::move(pod));
    }
  }
  return pods;
}

const json* findByName(const json& list, const std::string& name) {
  for (const json& item : list) {
    if (item.value("name", "") == name) {
      return &item;
    }
  }
  return nullptr;
}

class DraExamples : public testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(api_.start(), "");
    cache_ = std::make_unique<ClaimCache>(api_.api(), std::make_shared<RealClock>(),
                                          std::chrono::seconds(30), registry_);
    for (const fs::path& file : fs::directory_iterator(kSource / "examples" / "dra")) {
      for (const json& object : yamlFile(file)) {
        objects_.push_back(object);
        if (object["kind"] == "ResourceClaimTemplate") {
          api_.simulator().put("resourceclaimtemplates", object);
        } else if (object["kind"] == "ResourceClaim") {
          api_.simulator().put("resourceclaims", object);
        }
      }
    }
    auto policy = parseWebhookPolicy(readTestFile(kSource / "manifests/base/webhook/policy.json"));
    ASSERT_TRUE(policy.ok()) << policy.error().message;
    policy_ = *policy;
  }

  // The pod after the webhook's patch; fails the test when it is not admitted or has warnings.
  json admit(const json& pod) {
    json review = test_support::podCreateReview(pod, "5b0e3c1d-7a2f-4e69-9c8b-0d1e2f3a4b5c");
    review["request"]["namespace"] = pod["metadata"]["namespace"];
    const ReviewOutcome outcome = reviewAdmission(review.dump(), policy_, cache_->lookup());
    EXPECT_EQ(outcome.http_status, 200) << outcome.body;
    EXPECT_TRUE(outcome.warnings.empty()) << outcome.warnings.front();
    const json response = json::parse(outcome.body)["response"];
    EXPECT_EQ(response["allowed"], true);
    if (!response.contains("patch")) {
      return pod;
    }
    return pod.patch(json::parse(test_support::decodeBase64(response["patch"]).value()));
  }

  SimulatedApi api_;
  MetricsRegistry registry_;
  std::unique_ptr<ClaimCache> cache_;
  std::vector<json> objects_;
  WebhookPolicy policy_;
};

TEST_F(DraExamples, ThePolicysDeviceClassesAreTheManifests) {
  std::vector<std::string> classes;
  for (const json& object : yamlFile(kSource / "manifests/components/dra/deviceclasses.yaml")) {
    if (object["kind"] == "DeviceClass") {
      classes.push_back(object["metadata"]["name"]);
    }
  }
  std::vector<std::string> policy_classes = policy_.dra_device_classes;
  std::sort(classes.begin(), classes.end());
  std::sort(policy_classes.begin(), policy_classes.end());
  EXPECT_EQ(policy_classes, classes);
  EXPECT_EQ(classes.size(), 3u);
}

// Which containers of the examples' pods use a claim of an RDMA DeviceClass: all of them (the
// GPU-only containers the webhook must leave alone are in dra_claims_test.cc's pod).
const std::map<std::string, std::set<std::string>> kRdmaContainers = {
    {"nccl-one-gpu", {"nccl-tests"}},
    {"bert-large-nccl-dra-master-0", {"pytorch"}},
    {"bert-large-nccl-dra-worker-0", {"pytorch"}},
    {"feature-servers-7d9f8c6b5-x2k4q", {"server"}},
    {"inference-servers-7d9f8c6b5-x2k4q", {"server"}},
};

TEST_F(DraExamples, RdmaContainersGetIpcLockShmAndThePolicyEnvOthersNothing) {
  const std::vector<json> pods = examplePods(objects_);
  std::set<std::string> names;
  for (const json& pod : pods) {
    names.insert(pod["metadata"]["name"].get<std::string>());
  }
  std::set<std::string> expected_names;
  for (const auto& [name, containers] : kRdmaContainers) {
    expected_names.insert(name);
  }
  ASSERT_EQ(names, expected_names) << "a new example needs its pods in kRdmaContainers";

  for (const json& pod : pods) {
    const std::string name = pod["metadata"]["name"];
    SCOPED_TRACE(name);
    const json after = admit(pod);
    const std::set<std::string>& rdma = kRdmaContainers.at(name);
    const json volumes = after["spec"].value("volumes", json::array());
    for (const json& original : pod["spec"]["containers"]) {
      const std::string container_name = original["name"];
      SCOPED_TRACE(container_name);
      const json& c = *findByName(after["spec"]["containers"], container_name);
      if (!rdma.contains(container_name)) {
        EXPECT_EQ(c, original);
        continue;
      }
      const json add = c.value("/securityContext/capabilities/add"_json_pointer, json::array());
      EXPECT_TRUE(std::find(add.begin(), add.end(), "IPC_LOCK") != add.end()) << c.dump();

      const json mounts = c.value("volumeMounts", json::array());
      const json* shm = nullptr;
      for (const json& m : mounts) {
        shm = m.value("mountPath", "") == "/dev/shm" ? &m : shm;
      }
      ASSERT_NE(shm, nullptr) << c.dump();
      const json* volume = findByName(volumes, (*shm)["name"]);
      ASSERT_NE(volume, nullptr) << after["spec"].dump();
      EXPECT_EQ((*volume).value("/emptyDir/medium"_json_pointer, ""), "Memory");
      EXPECT_EQ((*volume).value("/emptyDir/sizeLimit"_json_pointer, ""), policy_.shm_size_limit);

      const json env = c.value("env", json::array());
      for (const PolicyEnvVar& var : policy_.env) {
        const json* set = findByName(env, var.name);
        ASSERT_NE(set, nullptr) << var.name << " missing: " << env.dump();
        EXPECT_EQ((*set)["value"], var.value) << var.name;
      }
      const json* ifname = findByName(env, "NCCL_SOCKET_IFNAME");
      ASSERT_NE(ifname, nullptr) << env.dump();
      EXPECT_EQ((*ifname)["value"], policy_.pod_network_socket_ifname);
      for (const json& mine : original.value("env", json::array())) {
        EXPECT_TRUE(std::find(env.begin(), env.end(), mine) != env.end())
            << "kept: " << mine.dump();
      }
      for (const json& mount : original.value("volumeMounts", json::array())) {
        EXPECT_TRUE(std::find(mounts.begin(), mounts.end(), mount) != mounts.end())
            << "kept: " << mount.dump();
      }
    }
    EXPECT_EQ(admit(after), after) << "the patched pod sent again (reinvocation) gets no patch";
  }
}

} // namespace
} // namespace kube_rdma
