#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/util/result.h"
#include "webhook/shorthand.h"

// The operator's policy for rdma-webhook: which pods count as RDMA pods and what they get at
// admission. Parsed from JSON (the ConfigMap), validated as a whole; every key and its default is
// in docs/webhook.md.
namespace kube_rdma {

struct PolicyEnvVar {
  std::string name;
  std::string value;
  bool operator==(const PolicyEnvVar&) const = default;
};

// What happens to a container that takes variables from envFrom (a ConfigMap or Secret the
// webhook cannot see): skip it (the envFrom may set the same names) or add anyway.
enum class EnvFromMode { kSkip, kAdd };

// Values for one node pool, picked when the pod is guaranteed to land in it: every key of
// node_selector is in the pod's nodeSelector with that value, or pinned to exactly that value in
// every term of its required node affinity.
struct NodePoolProfile {
  std::string name;
  std::map<std::string, std::string> node_selector;
  std::vector<PolicyEnvVar> env; // overrides the cluster-wide env by name
  std::optional<std::string> shm_size_limit;
};

struct WebhookPolicy {
  // Extended resources that make a container an RDMA container.
  std::vector<std::string> resources;
  // Shorthand annotation kube-rdma.io/rdma: link type ("ib", "roce") -> resource.
  ShorthandMap shorthand;
  // Where the shorthand is honoured; nullopt: every namespace the webhook acts on. Elsewhere a
  // pod with it is admitted unchanged, with a warning.
  std::optional<std::vector<std::string>> shorthand_namespaces;

  std::vector<std::string> include_namespaces; // empty: every namespace not excluded
  std::vector<std::string> exclude_namespaces;

  bool ipc_lock = true;
  // The nodes' device plugin runs in CDI mode, whose memlock hook raises every container's
  // locked-memory limit. Without it only a root process gains from IPC_LOCK.
  bool cdi = false;
  bool shm = true;
  std::string shm_size_limit; // a Kubernetes quantity

  std::vector<PolicyEnvVar> env;
  // NCCL_SOCKET_IFNAME for pods on the pod network (not hostNetwork); empty: not set.
  std::string pod_network_socket_ifname;
  EnvFromMode env_from = EnvFromMode::kSkip;

  // DeviceClasses whose devices make a container that uses a claim of them an RDMA container
  // (the DRA driver's three by default); empty: claims are not looked at.
  std::vector<std::string> dra_device_classes;

  std::vector<NodePoolProfile> profiles;
  std::map<std::string, std::string> annotations; // added where the pod does not set the key
};

// The shipped MutatingWebhookConfiguration (manifests/base/webhook) sends the webhook only pods
// that carry the shorthand annotation or have a container asking for a resource under this
// prefix; the manifests test checks the rendered matchConditions against this copy.
inline constexpr std::string_view kSentResourcePrefix = "rdma/";

// The policy's resources that the shipped MutatingWebhookConfiguration never sends to the webhook:
// a pod asking only for one of them (without the shorthand) gets no IPC_LOCK, /dev/shm or NCCL
// settings, unless the operator widened the matchConditions too.
std::vector<std::string> resourcesNeverSent(const WebhookPolicy& policy);

// The policy used when no --policy file is given (and the base the file's keys override).
WebhookPolicy defaultWebhookPolicy();

// Parses and validates a policy document. Errors name the JSON path of every bad field.
Result<WebhookPolicy> parseWebhookPolicy(const std::string& text);

// A Kubernetes resource quantity ("64Gi", "500M", "1e9", "1.5Gi") as a number of base units.
Result<double> parseQuantity(const std::string& text);

} // namespace kube_rdma
