// Properties over thousands of generated pods (fixed seed, so a failure reproduces): every patch
// applies, a second pass is empty, containers that ask for no RDMA are never touched, what the
// user wrote is never changed, and every RDMA container ends up with what the policy promises.
#include <gtest/gtest.h>

#include <random>

#include "test/webhook/admission_test_support.h"
#include "webhook/mutator.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

class PodGenerator {
public:
  explicit PodGenerator(uint32_t seed) : rng_(seed) {}

  json pod() {
    json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", json::object()}};
    json& metadata = pod["metadata"];
    metadata["namespace"] = pick({"training", "", "kube-system", "research"});
    if (chance(0.7)) {
      metadata["annotations"] = annotations();
    }
    json& spec = pod["spec"];
    spec["containers"] = containers("c", 1 + below(4));
    if (chance(0.4)) {
      spec["initContainers"] = containers("i", below(4));
      for (json& c : spec["initContainers"]) {
        if (chance(0.5)) {
          c["restartPolicy"] = "Always"; // a native sidecar
        }
      }
    }
    if (chance(0.5)) {
      spec["volumes"] = volumes();
    }
    if (chance(0.2)) {
      spec["hostNetwork"] = chance(0.5);
    }
    if (chance(0.3)) {
      spec["nodeSelector"] = {{"kube-rdma.io/pool", pick({"h100-ib", "a100-roce"})}};
    }
    return pod;
  }

private:
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  size_t below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  std::string pick(std::initializer_list<const char*> options) {
    return *(options.begin() + below(options.size()));
  }

  json annotations() {
    json out = json::object();
    if (chance(0.3)) {
      out["example.com/a~b/c"] = "escaped key";
    }
    if (chance(0.2)) {
      out[kRdmaAnnotation] =
          pick({"1", "2(roce)", "1(ib)", "4\xEF\xBC\x88roce\xEF\xBC\x89", "zero", "1(gpu)", "0"});
      if (chance(0.5)) {
        out[kRdmaContainerAnnotation] = pick({"c0", "c1", "missing"});
      }
    }
    if (chance(0.05)) {
      out[kInjectAnnotation] = pick({"false", "true"});
    }
    if (chance(0.05)) {
      out[kMirrorAnnotation] = "hash";
    }
    if (chance(0.1)) {
      out["sidecar.istio.io/inject"] = "true";
    }
    return out;
  }

  json containers(const std::string& prefix, size_t n) {
    json out = json::array();
    for (size_t i = 0; i < n; ++i) {
      json c = {{"name", prefix + std::to_string(i)}, {"image", "img"}};
      if (chance(0.8)) {
        c["resources"] = resources();
      }
      if (chance(0.5)) {
        c["env"] = env();
      }
      if (chance(0.15)) {
        c["envFrom"] = json::array({{{"configMapRef", {{"name", "cm"}}}}});
      }
      if (chance(0.6)) {
        c["securityContext"] = securityContext();
      }
      if (chance(0.5)) {
        c["volumeMounts"] = mounts();
      }
      out.push_back(std::move(c));
    }
    return out;
  }

  json resources() {
    json out = json::object();
    for (const char* kind : {"limits", "requests"}) {
      if (chance(0.5)) {
        json list = json::object();
        for (const char* name : {"rdma/hca", "rdma/shared", "nvidia.com/gpu", "memory"}) {
          if (chance(0.3)) {
            list[name] = std::string(name) == "memory" ? pick({"1Gi", "64Gi", "1Ti"}) : "1";
          }
        }
        out[kind] = list;
      }
    }
    return out;
  }

  json env() {
    json out = json::array();
    for (const char* name : {"NCCL_IB_DISABLE", "NCCL_IB_TIMEOUT", "NCCL_SOCKET_IFNAME",
                             "NCCL_IB_HCA", "NCCL_DEBUG", "USER_VAR"}) {
      if (chance(0.3)) {
        if (chance(0.2)) {
          out.push_back({{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", "x"}}}}}});
        } else {
          out.push_back({{"name", name}, {"value", pick({"1", "0", "mlx5_1", "=mlx5_1", "v"})}});
        }
      }
    }
    return out;
  }

  json securityContext() {
    switch (below(5)) {
    case 0:
      return json::object();
    case 1:
      return {{"privileged", chance(0.5)}};
    case 2:
      return nullptr;
    default: {
      json caps = json::object();
      for (const char* list : {"add", "drop"}) {
        if (chance(0.5)) {
          json names = json::array();
          for (const char* cap : {"IPC_LOCK", "NET_ADMIN", "ALL", "SYS_NICE"}) {
            if (chance(0.25)) {
              names.push_back(cap);
            }
          }
          caps[list] = names;
        }
      }
      return {{"runAsUser", 1000}, {"capabilities", caps}};
    }
    }
  }

  json mounts() {
    json out = json::array();
    if (chance(0.3)) {
      out.push_back({{"name", "shm"}, {"mountPath", "/dev/shm"}});
    }
    if (chance(0.5)) {
      out.push_back({{"name", "data"}, {"mountPath", "/data"}});
    }
    return out;
  }

  json volumes() {
    json out = json::array();
    if (chance(0.3)) {
      out.push_back({{"name", kShmVolumeName}, {"configMap", {{"name", "taken"}}}});
    }
    if (chance(0.2)) {
      out.push_back({{"name", std::string(kShmVolumeName) + "-1"}, {"emptyDir", json::object()}});
    }
    out.push_back({{"name", "data"}, {"emptyDir", json::object()}});
    return out;
  }

  std::mt19937 rng_;
};

bool asksForRdma(const json& container, const WebhookPolicy& policy) {
  if (!container.contains("resources")) {
    return false;
  }
  for (const char* kind : {"limits", "requests"}) {
    for (const std::string& r : policy.resources) {
      if (container["resources"].contains(kind) && container["resources"][kind].contains(r)) {
        return true;
      }
    }
  }
  return false;
}

std::vector<json> allContainers(const json& pod) {
  std::vector<json> out;
  for (const char* list : {"initContainers", "containers"}) {
    if (pod["spec"].contains(list)) {
      for (const json& c : pod["spec"][list]) {
        out.push_back(c);
      }
    }
  }
  return out;
}

// Whether container[list] has an element whose `field` is `value` (env by name, mounts by path).
bool listHas(const json& container, const char* list, const char* field, const std::string& value) {
  for (const json& item : container.value(list, json::array())) {
    if (item.value(field, "") == value) {
      return true;
    }
  }
  return false;
}

bool ipcLockSettled(const json& container) {
  const json& context = container.value("securityContext", json::object());
  if (!context.is_object()) {
    return false;
  }
  if (context.value("privileged", false)) {
    return true;
  }
  const json caps = context.value("capabilities", json::object());
  for (const char* list : {"add", "drop"}) {
    for (const json& name : caps.value(list, json::array())) {
      if (name == "IPC_LOCK" || name == "ALL") {
        return true;
      }
    }
  }
  return false;
}

std::vector<WebhookPolicy> policies() {
  WebhookPolicy plain = defaultWebhookPolicy();
  WebhookPolicy rich = defaultWebhookPolicy();
  rich.env_from = EnvFromMode::kAdd;
  rich.annotations = {{"sidecar.istio.io/inject", "false"}, {"a~b/c", "x"}};
  rich.profiles = {{"h100", {{"kube-rdma.io/pool", "h100-ib"}}, {{"NCCL_IB_SL", "3"}}, "64Gi"}};
  WebhookPolicy off = defaultWebhookPolicy();
  off.ipc_lock = false;
  off.shm = false;
  off.pod_network_socket_ifname = "";
  return {plain, rich, off};
}

TEST(MutatorProperty, HoldsForThousandsOfGeneratedPods) {
  PodGenerator generator(20261130);
  const std::vector<WebhookPolicy> all_policies = policies();
  size_t mutated = 0;
  for (int i = 0; i < 5000; ++i) {
    const WebhookPolicy& policy = all_policies[static_cast<size_t>(i) % all_policies.size()];
    const json pod = generator.pod();
    SCOPED_TRACE("pod " + std::to_string(i) + ": " + pod.dump());
    const test_support::JsonMutation result = test_support::mutateJsonPod(pod, "training", policy);

    for (const json& op : result.patch) {
      ASSERT_TRUE(op["op"] == "add" || op["op"] == "replace") << op.dump();
      if (op["op"] == "replace") {
        ASSERT_TRUE(pod.contains(json::json_pointer(op["path"].get<std::string>()))) << op;
      }
    }
    json patched;
    ASSERT_NO_THROW(patched = pod.patch(result.patch)) << result.patch.dump();
    if (!result.skipped.empty()) {
      ASSERT_EQ(patched, pod);
      continue;
    }
    mutated += result.patch.empty() ? 0 : 1;

    const test_support::JsonMutation second =
        test_support::mutateJsonPod(patched, "training", policy);
    ASSERT_EQ(second.patch, json::array()) << "second pass: " << second.patch.dump();

    const std::vector<json> before = allContainers(pod);
    const std::vector<json> after = allContainers(patched);
    ASSERT_EQ(before.size(), after.size());
    for (size_t c = 0; c < after.size(); ++c) {
      if (!asksForRdma(after[c], policy)) {
        ASSERT_EQ(before[c], after[c]) << "a container without RDMA was changed";
        continue;
      }
      // What the user wrote stays, in place: the webhook only appends.
      const json env_before = before[c].value("env", json::array());
      for (size_t e = 0; e < env_before.size(); ++e) {
        ASSERT_EQ(after[c]["env"][e], env_before[e]);
      }
      const bool env_skipped =
          before[c].contains("envFrom") && policy.env_from == EnvFromMode::kSkip;
      for (const PolicyEnvVar& var : policy.env) {
        ASSERT_TRUE(env_skipped || listHas(after[c], "env", "name", var.name)) << var.name;
      }
      ASSERT_TRUE(!policy.shm || listHas(after[c], "volumeMounts", "mountPath", "/dev/shm"));
      ASSERT_TRUE(!policy.ipc_lock || ipcLockSettled(after[c]));
    }
  }
  // The generator must reach the interesting cases, or the properties above say little.
  EXPECT_GT(mutated, 1000u);
}

} // namespace
} // namespace kube_rdma
