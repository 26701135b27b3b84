#include "webhook/policy.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>
#include <utility>

#include "common/util/json_reader.h"
#include "common/pools/plugin_config.h"
#include "common/util/strings.h"

namespace kube_rdma {
namespace {

constexpr const char* kOwnAnnotationPrefix = "kube-rdma.io/";

std::vector<PolicyEnvVar> readEnv(ObjectReader& parent, const std::string& key,
                                  std::vector<PolicyEnvVar> fallback) {
  if (!parent.has(key)) {
    return fallback;
  }
  std::vector<PolicyEnvVar> env;
  std::set<std::string> seen;
  for (ObjectReader& item : parent.objectArray(key)) {
    PolicyEnvVar var{item.required<std::string>("name"), item.required<std::string>("value")};
    if (var.name.empty() || var.name.find('=') != std::string::npos) {
      item.fail("name", "must be a non-empty variable name without '='");
    } else if (!seen.insert(var.name).second) {
      item.fail("name", "\"" + var.name + "\" is set twice");
    }
    item.finish();
    env.push_back(std::move(var));
  }
  return env;
}

void checkQuantity(ObjectReader& reader, const std::string& key, const std::string& text) {
  Result<double> quantity = parseQuantity(text);
  if (!quantity.ok()) {
    reader.fail(key, quantity.error().message);
  } else if (*quantity <= 0) {
    reader.fail(key, "must be above zero, got \"" + text + "\"");
  }
}

void readResources(ObjectReader& root, WebhookPolicy& policy) {
  policy.resources = root.optional("resources", policy.resources);
  std::set<std::string> seen;
  for (const std::string& name : policy.resources) {
    // The device plugin's resource names pass the same check, so a name the API server would
    // refuse as an extended resource never reaches a pod.
    if (Status valid = validateExtendedResourceName(name); !valid.ok()) {
      root.fail("resources", valid.error().message);
    } else if (!seen.insert(name).second) {
      root.fail("resources", "\"" + name + "\" is listed twice");
    }
  }
  if (policy.resources.empty()) {
    root.fail("resources", "must name at least one resource");
  }

  ObjectReader shorthand = root.object("shorthand");
  ShorthandMap& map = policy.shorthand;
  map.by_type = shorthand.optional("types", map.by_type);
  map.untyped = shorthand.optional("untyped", map.untyped);
  for (const auto& [type, resource] : map.by_type) {
    const bool lower = std::all_of(type.begin(), type.end(), [](unsigned char c) {
      return std::islower(c) || std::isdigit(c) || c == '-' || c == '_';
    });
    if (type.empty() || !lower) {
      shorthand.fail("types", "type \"" + type + "\" must be lower-case letters and digits");
    }
    if (!listContains(policy.resources, resource)) {
      shorthand.fail("types", "type \"" + type + "\" maps to \"" + resource +
                                  "\", which is not in $.resources");
    }
  }
  if (!listContains(policy.resources, map.untyped)) {
    shorthand.fail("untyped", "\"" + map.untyped + "\" is not in $.resources");
  }
  policy.shorthand_namespaces = shorthand.maybe<std::vector<std::string>>("namespaces");
  if (policy.shorthand_namespaces) {
    std::set<std::string> seen;
    for (const std::string& ns : *policy.shorthand_namespaces) {
      if (ns.empty()) {
        shorthand.fail("namespaces", "a namespace name must not be empty");
      } else if (!seen.insert(ns).second) {
        shorthand.fail("namespaces", "\"" + ns + "\" is listed twice");
      }
    }
  }
  shorthand.finish();
}

void readNamespaces(ObjectReader& root, WebhookPolicy& policy) {
  ObjectReader namespaces = root.object("namespaces");
  policy.include_namespaces = namespaces.optional("include", policy.include_namespaces);
  policy.exclude_namespaces = namespaces.optional("exclude", policy.exclude_namespaces);
  for (const std::string& ns : policy.include_namespaces) {
    if (listContains(policy.exclude_namespaces, ns)) {
      namespaces.fail("include", "\"" + ns + "\" is both included and excluded");
    }
  }
  namespaces.finish();
}

void readShm(ObjectReader& root, WebhookPolicy& policy) {
  ObjectReader shm = root.object("shm");
  policy.shm = shm.optional("enabled", policy.shm);
  policy.shm_size_limit = shm.optional("sizeLimit", policy.shm_size_limit);
  checkQuantity(shm, "sizeLimit", policy.shm_size_limit);
  shm.finish();
}

void readDraDeviceClasses(ObjectReader& root, WebhookPolicy& policy) {
  policy.dra_device_classes = root.optional("draDeviceClasses", policy.dra_device_classes);
  std::set<std::string> seen;
  for (const std::string& name : policy.dra_device_classes) {
    if (!isDnsSubdomain(name)) {
      root.fail("draDeviceClasses", "\"" + name + "\" is not a DeviceClass name (a DNS subdomain)");
    } else if (!seen.insert(name).second) {
      root.fail("draDeviceClasses", "\"" + name + "\" is listed twice");
    }
  }
}

void readProfiles(ObjectReader& root, WebhookPolicy& policy) {
  std::set<std::string> names;
  for (ObjectReader& item : root.objectArray("profiles")) {
    NodePoolProfile profile;
    profile.name = item.required<std::string>("name");
    if (profile.name.empty()) {
      item.fail("name", "must not be empty");
    } else if (!names.insert(profile.name).second) {
      item.fail("name", "profile \"" + profile.name + "\" is defined twice");
    }
    profile.node_selector = item.required<std::map<std::string, std::string>>("nodeSelector");
    if (profile.node_selector.empty()) {
      item.fail("nodeSelector", "must name at least one node label");
    }
    profile.env = readEnv(item, "env", {});
    profile.shm_size_limit = item.maybe<std::string>("shmSizeLimit");
    if (profile.shm_size_limit) {
      checkQuantity(item, "shmSizeLimit", *profile.shm_size_limit);
    }
    item.finish();
    policy.profiles.push_back(std::move(profile));
  }
}

} // namespace

WebhookPolicy defaultWebhookPolicy() {
  WebhookPolicy policy;
  policy.resources = {"rdma/hca", "rdma/shared"};
  policy.shorthand = defaultShorthandMap();
  policy.exclude_namespaces = {"kube-system", "kube-public", "kube-node-lease"};
  policy.shm_size_limit = "16Gi";
  policy.env = {
      {"NCCL_IB_DISABLE", "0"}, {"NCCL_IB_TIMEOUT", "22"}, {"NCCL_IB_QPS_PER_CONNECTION", "8"}};
  policy.pod_network_socket_ifname = "eth0";
  policy.dra_device_classes = {"rdma.kube-rdma.io", "roce.rdma.kube-rdma.io",
                               "ib.rdma.kube-rdma.io"};
  return policy;
}

Result<WebhookPolicy> parseWebhookPolicy(const std::string& text) {
  Result<nlohmann::json> document = parseJsonDocument(text, "policy");
  if (!document.ok()) {
    return document.error();
  }
  JsonErrors errors;
  ObjectReader root = ObjectReader::root(*document, errors);
  WebhookPolicy policy = defaultWebhookPolicy();

  readResources(root, policy);
  readNamespaces(root, policy);
  policy.ipc_lock = root.optional("ipcLock", policy.ipc_lock);
  policy.cdi = root.optional("cdi", policy.cdi);
  readShm(root, policy);
  policy.env = readEnv(root, "env", policy.env);
  policy.pod_network_socket_ifname =
      root.optional("podNetworkSocketIfname", policy.pod_network_socket_ifname);
  if (policy.pod_network_socket_ifname.size() == 1) {
    // NCCL ignores a NCCL_SOCKET_IFNAME of one character (it tests strlen > 1).
    root.fail("podNetworkSocketIfname", "NCCL ignores a one-character interface name");
  }
  policy.env_from = root.optionalEnum("envFrom", {"skip", "add"}, "skip") == "add"
                        ? EnvFromMode::kAdd
                        : EnvFromMode::kSkip;
  readDraDeviceClasses(root, policy);
  readProfiles(root, policy);
  policy.annotations = root.optional("annotations", policy.annotations);
  for (const auto& [key, value] : policy.annotations) {
    if (key.rfind(kOwnAnnotationPrefix, 0) == 0) {
      root.fail("annotations", "\"" + key + "\" is in the webhook's own kube-rdma.io/ prefix");
    }
  }
  root.finish();

  Status status = errors.status();
  if (!status.ok()) {
    return status.error();
  }
  return policy;
}

Result<double> parseQuantity(const std::string& text) {
  // <number><suffix>: binary (Ki..Ei), decimal (n u m k M G T P E) or an exponent (e3, E-2).
  static const std::map<std::string, double> kSuffixes = {
      {"Ki", 0x1p10}, {"Mi", 0x1p20}, {"Gi", 0x1p30}, {"Ti", 0x1p40}, {"Pi", 0x1p50},
      {"Ei", 0x1p60}, {"n", 1e-9},    {"u", 1e-6},    {"m", 1e-3},    {"k", 1e3},
      {"M", 1e6},     {"G", 1e9},     {"T", 1e12},    {"P", 1e15},    {"E", 1e18},
  };
  const auto bad = [&text] {
    return makeError("\"" + text + "\" is not a Kubernetes quantity (e.g. 64Gi, 500M)");
  };
  const size_t number_start = text.starts_with('+') ? 1 : 0;
  size_t pos = number_start;
  bool digits = false;
  while (pos < text.size() && (std::isdigit(static_cast<unsigned char>(text[pos])) ||
                               (text[pos] == '.' && text.find('.', number_start) == pos))) {
    digits = digits || text[pos] != '.';
    ++pos;
  }
  if (!digits) {
    return bad();
  }
  const double number = std::strtod(text.substr(number_start, pos - number_start).c_str(), nullptr);
  const std::string suffix = text.substr(pos);
  if (suffix.empty()) {
    return number;
  }
  if (const auto factor = kSuffixes.find(suffix); factor != kSuffixes.end()) {
    return number * factor->second;
  }
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    size_t exp_pos = 1;
    if (suffix[exp_pos] == '-' || suffix[exp_pos] == '+') {
      ++exp_pos;
    }
    const size_t exp_digits = suffix.size() - exp_pos;
    if (exp_digits > 0 && exp_digits <= 3 &&
        suffix.find_first_not_of("0123456789", exp_pos) == std::string::npos) {
      return number * std::pow(10.0, std::atoi(suffix.c_str() + 1));
    }
  }
  return bad();
}

std::vector<std::string> resourcesNeverSent(const WebhookPolicy& policy) {
  std::vector<std::string> never;
  std::copy_if(
      policy.resources.begin(), policy.resources.end(), std::back_inserter(never),
      [](const std::string& resource) { return !resource.starts_with(kSentResourcePrefix); });
  return never;
}

} // namespace kube_rdma
