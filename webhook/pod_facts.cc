#include "webhook/pod_facts.h"

#include <algorithm>
#include <iterator>

namespace kube_rdma {
namespace {

constexpr const char* kCapabilityLists[] = {"add", "drop"};

bool asksFor(JsonElement container, const std::string& resource) {
  JsonElement resources;
  JsonElement list;
  if (!member(container, "resources", resources)) {
    return false;
  }
  return std::any_of(std::begin(kResourceLists), std::end(kResourceLists), [&](const char* kind) {
    return member(resources, kind, list) && hasMember(list, resource);
  });
}

// Whether every node the pod may land on is guaranteed to carry label key=value.
bool pinnedToLabel(JsonElement spec, const std::string& key, const std::string& value) {
  JsonElement selector;
  JsonElement label;
  if (member(spec, "nodeSelector", selector) && member(selector, key, label) && label.is_string() &&
      stringOf(label) == value) {
    return true;
  }
  JsonElement terms = spec;
  for (const char* step : {"affinity", "nodeAffinity",
                           "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"}) {
    if (!member(terms, step, terms)) {
      return false;
    }
  }
  const simdjson::dom::array term_list = arrayOf(terms);
  if (term_list.size() == 0) {
    return false;
  }
  // Terms are ORed: each one must pin the label, with `In` and that single value.
  return std::all_of(term_list.begin(), term_list.end(), [&](JsonElement term) {
    const simdjson::dom::array expressions = arrayMember(term, "matchExpressions");
    return std::any_of(expressions.begin(), expressions.end(), [&](JsonElement e) {
      const simdjson::dom::array values = arrayMember(e, "values");
      if (stringMember(e, "key") != key || stringMember(e, "operator") != "In" ||
          values.size() != 1) {
        return false;
      }
      const JsonElement only = *values.begin();
      return only.is_string() && stringOf(only) == value;
    });
  });
}

// The container's security setting `key`, else the pod's (Kubernetes' own precedence).
std::optional<JsonElement> securitySetting(JsonElement spec, JsonElement container,
                                           std::string_view key) {
  for (const JsonElement owner : {container, spec}) {
    JsonElement context;
    JsonElement value;
    if (member(owner, "securityContext", context) && member(context, key, value)) {
      return value;
    }
  }
  return std::nullopt;
}

} // namespace

const std::string* rdmaResourceOf(JsonElement container, const WebhookPolicy& policy) {
  const auto it = std::find_if(policy.resources.begin(), policy.resources.end(),
                               [container](const std::string& r) { return asksFor(container, r); });
  return it == policy.resources.end() ? nullptr : &*it;
}

const NodePoolProfile* pickProfile(JsonElement spec, const WebhookPolicy& policy) {
  const auto matches = [spec](const NodePoolProfile& profile) {
    return std::all_of(
        profile.node_selector.begin(), profile.node_selector.end(),
        [spec](const auto& label) { return pinnedToLabel(spec, label.first, label.second); });
  };
  const auto it = std::find_if(policy.profiles.begin(), policy.profiles.end(), matches);
  return it == policy.profiles.end() ? nullptr : &*it;
}

bool usesHostNetwork(JsonElement spec) {
  JsonElement host_network;
  bool on_host_network = false;
  return member(spec, "hostNetwork", host_network) &&
         host_network.get(on_host_network) == simdjson::SUCCESS && on_host_network;
}

std::optional<JsonElement> envEntry(JsonElement container, std::string_view name) {
  const simdjson::dom::array env = arrayMember(container, "env");
  auto it = std::find_if(env.begin(), env.end(),
                         [name](JsonElement e) { return stringMember(e, "name") == name; });
  return it == env.end() ? std::nullopt : std::optional<JsonElement>(*it);
}

bool decidesIpcLock(JsonElement container) {
  JsonElement context;
  JsonElement privileged;
  JsonElement capabilities;
  if (!member(container, "securityContext", context)) {
    return false;
  }
  bool is_privileged = false;
  if (member(context, "privileged", privileged) &&
      privileged.get(is_privileged) == simdjson::SUCCESS && is_privileged) {
    return true;
  }
  if (!member(context, "capabilities", capabilities)) {
    return false;
  }
  return std::any_of(std::begin(kCapabilityLists), std::end(kCapabilityLists),
                     [&](const char* list) {
                       const simdjson::dom::array names = arrayMember(capabilities, list);
                       return std::any_of(names.begin(), names.end(), [](JsonElement n) {
                         const std::string_view name = stringOf(n);
                         return name == "IPC_LOCK" || name == "CAP_IPC_LOCK" || name == "ALL";
                       });
                     });
}

bool mountsShm(JsonElement container) {
  const simdjson::dom::array mounts = arrayMember(container, "volumeMounts");
  return std::any_of(mounts.begin(), mounts.end(), [](JsonElement m) {
    const std::string_view path = stringMember(m, "mountPath");
    return path == kShmPath || path == "/dev/shm/" || path == "/dev" || path == "/dev/";
  });
}

std::optional<std::string_view> shmVolumeSizeLimit(JsonElement volume) {
  JsonElement empty_dir;
  if (!member(volume, "emptyDir", empty_dir) || stringMember(empty_dir, "medium") != "Memory") {
    return std::nullopt;
  }
  return stringMember(empty_dir, "sizeLimit");
}

std::optional<double> podMemoryLimit(JsonElement spec) {
  double total = 0;
  for (const char* list : {"initContainers", "containers"}) {
    for (JsonElement c : arrayMember(spec, list)) {
      if (std::string_view(list) == "initContainers" &&
          stringMember(c, "restartPolicy") != "Always") {
        continue;
      }
      JsonElement resources;
      JsonElement limits;
      const bool has_limits =
          member(c, "resources", resources) && member(resources, "limits", limits);
      Result<double> limit =
          parseQuantity(std::string(has_limits ? stringMember(limits, "memory") : ""));
      if (!limit.ok()) {
        return std::nullopt;
      }
      total += *limit;
    }
  }
  return total;
}

bool runsAsNonRoot(JsonElement spec, JsonElement container) {
  if (const std::optional<JsonElement> uid = securitySetting(spec, container, "runAsUser")) {
    double value = 0;
    return uid->is_number() && uid->get(value) == simdjson::SUCCESS && value != 0;
  }
  const std::optional<JsonElement> non_root = securitySetting(spec, container, "runAsNonRoot");
  bool yes = false;
  return non_root && non_root->get(yes) == simdjson::SUCCESS && yes;
}

} // namespace kube_rdma
