#include "webhook/mutator.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string_view>
#include <utility>

#include "webhook/shorthand.h"
#include "common/util/strings.h"
#include "webhook/json_patch_writer.h"
#include "webhook/pod_facts.h"
#include "webhook/pod_fields.h"

namespace kube_rdma {
namespace {

constexpr const char* kSocketIfname = "NCCL_SOCKET_IFNAME";

std::string inQuotes(std::string_view text) {
  return "\"" + std::string(text) + "\"";
}

// The container the shorthand annotation adds its resource to, and what it adds.
struct ShorthandTarget {
  std::optional<size_t> container; // index in spec.containers; nullopt: nothing to add
  ShorthandRequest request;
};

// An error means the pod is admitted unchanged.
Result<ShorthandTarget> resolveShorthandTarget(JsonElement spec,
                                               std::optional<JsonElement> annotations,
                                               const std::string& ns, const WebhookPolicy& policy) {
  JsonElement value;
  if (!annotations || !member(*annotations, kRdmaAnnotation, value)) {
    return ShorthandTarget{};
  }
  if (policy.shorthand_namespaces && !listContains(*policy.shorthand_namespaces, ns)) {
    return makeError(std::string(kRdmaAnnotation) + " is not allowed in namespace " + inQuotes(ns) +
                     " (policy shorthand.namespaces)");
  }
  if (!value.is_string()) {
    return makeError(std::string(kRdmaAnnotation) + " must be a string");
  }
  Result<ShorthandRequest> request = resolveShorthand(stringOf(value), policy.shorthand);
  if (!request.ok()) {
    return makeError(std::string(kRdmaAnnotation) + ": " + request.error().message);
  }
  const simdjson::dom::array containers = arrayMember(spec, "containers");
  if (containers.size() == 0) {
    return makeError(std::string(kRdmaAnnotation) + ": the pod has no containers");
  }
  auto target = containers.begin();
  if (hasMember(*annotations, kRdmaContainerAnnotation)) {
    const std::string_view wanted = stringMember(*annotations, kRdmaContainerAnnotation);
    target = std::find_if(containers.begin(), containers.end(), [wanted](JsonElement c) {
      return !wanted.empty() && stringMember(c, "name") == wanted;
    });
    if (target == containers.end()) {
      return makeError(std::string(kRdmaContainerAnnotation) +
                       " names no container of the pod: " + inQuotes(wanted));
    }
  }
  if (const std::string* existing = rdmaResourceOf(*target, policy)) {
    if (*existing != request->resource) {
      return makeError(std::string(kRdmaAnnotation) + " asks for " + request->resource +
                       " but container " + inQuotes(stringMember(*target, "name")) +
                       " already asks for " + *existing);
    }
    return ShorthandTarget{}; // already there: a second pass adds nothing
  }
  return ShorthandTarget{static_cast<size_t>(std::distance(containers.begin(), target)), *request};
}

// Cluster env, then the profile's by name, then the pod-network interface.
std::vector<PolicyEnvVar> envFor(JsonElement spec, const NodePoolProfile* profile,
                                 const WebhookPolicy& policy) {
  std::vector<PolicyEnvVar> env = policy.env;
  const auto set = [&env](const PolicyEnvVar& var) {
    auto it = std::find_if(env.begin(), env.end(),
                           [&var](const PolicyEnvVar& e) { return e.name == var.name; });
    if (it == env.end()) {
      env.push_back(var);
    } else {
      it->value = var.value;
    }
  };
  if (profile != nullptr) {
    std::for_each(profile->env.begin(), profile->env.end(), set);
  }
  const bool has_ifname = std::any_of(
      env.begin(), env.end(), [](const PolicyEnvVar& e) { return e.name == kSocketIfname; });
  if (!usesHostNetwork(spec) && !has_ifname && !policy.pod_network_socket_ifname.empty()) {
    env.push_back({kSocketIfname, policy.pod_network_socket_ifname});
  }
  return env;
}

// The memory volumes after the mutation: name, sizeLimit ("" when none).
using ShmVolumes = std::vector<std::pair<std::string, std::string>>;

// The name of the shm volume to mount: ours (a memory emptyDir) if the pod or this pass has it,
// otherwise a name no volume uses, for which a volume is added to `spec_additions`.
std::string ensureShmVolume(std::vector<std::string>& volume_names, ShmVolumes& shm_volumes,
                            const std::string& size_limit, Addition& spec_additions) {
  for (int suffix = 0;; ++suffix) {
    std::string name =
        suffix == 0 ? kShmVolumeName : std::string(kShmVolumeName) + "-" + std::to_string(suffix);
    if (!listContains(volume_names, name)) {
      volume_names.push_back(name);
      shm_volumes.emplace_back(name, size_limit);
      spec_additions.append(
          "volumes",
          Addition::object(
              {{"name", Addition::string(name)},
               {"emptyDir", Addition::object({{"medium", Addition::string("Memory")},
                                              {"sizeLimit", Addition::string(size_limit)}})}}));
      return name;
    }
    if (std::any_of(shm_volumes.begin(), shm_volumes.end(),
                    [&name](const auto& v) { return v.first == name; })) {
      return name;
    }
  }
}

// An RDMA container and what the mutation adds to it.
struct RdmaContainer {
  const char* list; // "initContainers" or "containers"
  size_t index;
  JsonElement pod_value;
  bool shorthand_target;
  std::string name;
  Addition additions;
  std::vector<PolicyEnvVar> added_env;
  std::string shm_volume; // the volume mounted at /dev/shm by this pass, "" when none
};

// The value of the container's env var `name` after the mutation, nullopt when unset.
std::optional<std::string_view> envValue(const RdmaContainer& c, std::string_view name) {
  if (const std::optional<JsonElement> e = envEntry(c.pod_value, name)) {
    return stringMember(*e, "value");
  }
  auto it = std::find_if(c.added_env.begin(), c.added_env.end(),
                         [name](const PolicyEnvVar& v) { return v.name == name; });
  return it == c.added_env.end() ? std::nullopt : std::optional<std::string_view>(it->value);
}

// The sizeLimit of the memory volume mounted at /dev/shm in the container, if any.
std::optional<std::string> shmSizeLimit(const ShmVolumes& volumes, const RdmaContainer& c) {
  std::vector<std::string_view> mounted;
  for (JsonElement m : arrayMember(c.pod_value, "volumeMounts")) {
    if (stringMember(m, "mountPath") == kShmPath) {
      mounted.push_back(stringMember(m, "name"));
    }
  }
  if (!c.shm_volume.empty()) {
    mounted.push_back(c.shm_volume);
  }
  for (const std::string_view name : mounted) {
    for (const auto& [volume, limit] : volumes) {
      if (volume == name) {
        return limit.empty() ? std::nullopt : std::optional<std::string>(limit);
      }
    }
  }
  return std::nullopt;
}

void warnAbout(JsonElement spec, const ShmVolumes& volumes, const std::vector<RdmaContainer>& rdma,
               const WebhookPolicy& policy, std::vector<std::string>& out) {
  for (const RdmaContainer& c : rdma) {
    const std::string name = inQuotes(c.name);
    if (!policy.cdi && runsAsNonRoot(spec, c.pod_value)) {
      out.push_back("container " + name +
                    " runs as non-root: IPC_LOCK does not lift its memlock limit without CDI");
    }
    if (envValue(c, "NCCL_IB_DISABLE") == "1") {
      out.push_back("container " + name + " sets NCCL_IB_DISABLE=1: NCCL will not use RDMA");
    }
    if (const std::optional<std::string_view> value = envValue(c, "NCCL_IB_HCA")) {
      const std::string_view list = value->starts_with('^') ? value->substr(1) : *value;
      if (!list.empty() && list.front() != '=') {
        out.push_back("container " + name +
                      ": NCCL_IB_HCA without '=' matches prefixes (mlx5_1 also picks mlx5_10..19)");
      }
    }
  }
  const std::optional<double> memory = podMemoryLimit(spec);
  for (const RdmaContainer& c : rdma) {
    std::optional<std::string> limit = shmSizeLimit(volumes, c);
    Result<double> bytes = parseQuantity(limit.value_or(""));
    if (memory && bytes.ok() && *bytes > *memory) {
      out.push_back("/dev/shm sizeLimit " + *limit +
                    " is above the pod's memory limit; tmpfs counts as pod memory");
      break;
    }
  }
}

// An error names the member of the pod the mutation cannot go into.
Result<MutationResult> mutate(JsonElement pod, const std::string& request_namespace,
                              const WebhookPolicy& policy, const PodRdmaClaims& claims) {
  MutationResult result;
  result.skipped = podSkipReason(pod, request_namespace, policy);
  JsonElement spec;
  if (!result.skipped.empty() || !member(pod, "spec", spec)) {
    return result;
  }
  JsonElement metadata;
  JsonElement annotations_value;
  const bool has_metadata = member(pod, "metadata", metadata);
  const std::optional<JsonElement> annotations =
      has_metadata && member(metadata, "annotations", annotations_value)
          ? std::optional<JsonElement>(annotations_value)
          : std::nullopt;
  const std::string ns = podNamespace(pod, request_namespace);
  Result<ShorthandTarget> shorthand = resolveShorthandTarget(spec, annotations, ns, policy);
  if (!shorthand.ok()) {
    result.skipped = "bad shorthand";
    result.warnings.push_back("pod left unchanged: " + shorthand.error().message);
    return result;
  }

  // The RDMA containers by place: most pods have none.
  std::vector<RdmaContainer> rdma;
  for (const char* list : {"initContainers", "containers"}) {
    size_t index = 0;
    for (JsonElement c : arrayMember(spec, list)) {
      const bool target = list == std::string_view("containers") && shorthand->container == index;
      if (target || rdmaResourceOf(c, policy) != nullptr || usesRdmaClaim(c, claims)) {
        rdma.push_back({list, index, c, target, std::string(stringMember(c, "name")), {}, {}, {}});
      }
      ++index;
    }
  }
  if (rdma.empty()) {
    return result;
  }
  if (has_metadata && !metadata.is_null() && !metadata.is_object()) {
    return makeError("/metadata is not an object");
  }

  Addition record; // the kube-rdma.io/injected annotation
  record.at("containers");
  const NodePoolProfile* profile = pickProfile(spec, policy);
  const std::vector<PolicyEnvVar> env = envFor(spec, profile, policy);
  const std::string size_limit =
      profile && profile->shm_size_limit ? *profile->shm_size_limit : policy.shm_size_limit;
  ShmVolumes shm_volumes; // the pod's memory volumes, then the one this pass adds
  std::vector<std::string> volume_names;
  for (JsonElement v : arrayMember(spec, "volumes")) {
    volume_names.emplace_back(stringMember(v, "name"));
    if (std::optional<std::string_view> limit = shmVolumeSizeLimit(v)) {
      shm_volumes.emplace_back(stringMember(v, "name"), *limit);
    }
  }
  Addition spec_additions;
  for (RdmaContainer& c : rdma) {
    // A kind of change made, and the container's entry for it in the record.
    const auto made = [&result, &record, &c](const char* kind, std::string item) {
      result.applied.insert(kind);
      record.at("containers").append(c.name, Addition::string(std::move(item)));
    };
    if (c.shorthand_target) {
      const std::string count = std::to_string(shorthand->request.count);
      for (const char* kind : kResourceLists) {
        c.additions.at("resources").at(kind).set(shorthand->request.resource, count);
      }
      made("resources", "resources");
    }
    if (arrayMember(c.pod_value, "envFrom").size() > 0 && policy.env_from == EnvFromMode::kSkip) {
      result.warnings.push_back("container " + inQuotes(c.name) +
                                " uses envFrom: policy env not added (envFrom: skip)");
    } else {
      for (const PolicyEnvVar& var : env) {
        if (!envEntry(c.pod_value, var.name)) {
          c.additions.append("env", Addition::object({{"name", Addition::string(var.name)},
                                                      {"value", Addition::string(var.value)}}));
          c.added_env.push_back(var);
          made("env", "env:" + var.name);
        }
      }
    }
    if (policy.ipc_lock && !decidesIpcLock(c.pod_value)) {
      c.additions.at("securityContext")
          .at("capabilities")
          .append("add", Addition::string("IPC_LOCK"));
      made("ipc-lock", "ipc-lock");
    }
    if (policy.shm && !mountsShm(c.pod_value)) {
      c.shm_volume = ensureShmVolume(volume_names, shm_volumes, size_limit, spec_additions);
      c.additions.append("volumeMounts",
                         Addition::object({{"name", Addition::string(c.shm_volume)},
                                           {"mountPath", Addition::string(kShmPath)}}));
      made("shm", "shm");
      record.set("volume", c.shm_volume);
    }
  }
  Addition metadata_additions;
  for (const auto& [key, value] : policy.annotations) {
    if (!annotations || !hasMember(*annotations, key)) {
      metadata_additions.at("annotations").set(key, value);
      result.applied.insert("annotations");
      record.append("annotations", Addition::string(key));
    }
  }
  warnAbout(spec, shm_volumes, rdma, policy, result.warnings);
  if (result.applied.empty()) {
    return result; // everything was there already: no patch, not even the record
  }
  if (profile != nullptr) {
    record.set("profile", profile->name);
  }
  mergeRecord(annotations ? stringMember(*annotations, kInjectedAnnotation) : "", record);
  std::string record_text;
  appendJson(record_text, record);
  metadata_additions.at("annotations").set(kInjectedAnnotation, std::move(record_text));

  // The patch: what each member gained, at the paths of the pod as sent.
  if (Status s = writePatch(has_metadata ? std::optional<JsonElement>(metadata) : std::nullopt,
                            metadata_additions, "/metadata", result.patch);
      !s.ok()) {
    return s.error();
  }
  for (const RdmaContainer& c : rdma) {
    if (Status s = writePatch(c.pod_value, c.additions,
                              "/spec/" + std::string(c.list) + "/" + std::to_string(c.index),
                              result.patch);
        !s.ok()) {
      return s.error();
    }
  }
  if (Status s = writePatch(spec, spec_additions, "/spec", result.patch); !s.ok()) {
    return s.error();
  }
  result.patch += ']'; // writePatch opened the array
  return result;
}

} // namespace

std::string podSkipReason(JsonElement pod, const std::string& request_namespace,
                          const WebhookPolicy& policy) {
  JsonElement metadata;
  JsonElement annotations;
  const bool has_annotations =
      member(pod, "metadata", metadata) && member(metadata, "annotations", annotations);
  if (has_annotations && hasMember(annotations, kMirrorAnnotation)) {
    return "mirror pod";
  }
  if (has_annotations && stringMember(annotations, kInjectAnnotation) == "false") {
    return "opted out by kube-rdma.io/inject";
  }
  const std::string ns = podNamespace(pod, request_namespace);
  if (listContains(policy.exclude_namespaces, ns)) {
    return "namespace " + ns + " is excluded";
  }
  if (!policy.include_namespaces.empty() && !listContains(policy.include_namespaces, ns)) {
    return "namespace " + ns + " is not included";
  }
  return "";
}

MutationResult mutatePod(JsonElement pod, const std::string& request_namespace,
                         const WebhookPolicy& policy, const PodRdmaClaims& claims) {
  Result<MutationResult> mutated = mutate(pod, request_namespace, policy, claims);
  if (mutated.ok()) {
    return std::move(mutated).value();
  }
  // A pod the API server decoded always has the shapes read above; anything else is left alone.
  MutationResult result;
  result.skipped = "malformed pod";
  result.warnings.push_back("pod left unchanged: unexpected shape: " + mutated.error().message);
  return result;
}

} // namespace kube_rdma
