#include "dra/claim_rendering.h"

#include <algorithm>
#include <numeric>

#include "common/pools/cdi_edits.h"
#include "common/util/json_members.h"
#include "common/util/json_reader.h"
#include "common/pools/nccl_settings.h"
#include "common/pools/pools.h"
#include "common/util/strings.h"
#include "dra/rdma_config.h"
#include "dra/resource_slice.h"

namespace kube_rdma {
namespace {

using Json = nlohmann::ordered_json;

// A UID names files on the node: a UUID's characters only.
bool isUid(const std::string& uid) {
  return !uid.empty() && uid.size() <= 64 && std::all_of(uid.begin(), uid.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

struct ClaimedPort {
  DraPort port;
  size_t published_index = 0; // topology order
  std::string request;
  std::string share_id; // empty unless the port is shared by many claims
};

// Whether a config entry's `requests` covers a result's request: an empty list covers all, and a
// config for "gpu-nic" covers the subrequest "gpu-nic/roce" of a firstAvailable request.
bool covers(const nlohmann::json* requests, const std::vector<ClaimedPort>& claimed) {
  if (requests == nullptr || !requests->is_array() || requests->empty()) {
    return true;
  }
  return std::any_of(requests->begin(), requests->end(), [&](const nlohmann::json& r) {
    if (!r.is_string()) {
      return false;
    }
    const std::string name = r.get<std::string>();
    return std::any_of(claimed.begin(), claimed.end(), [&](const ClaimedPort& c) {
      return c.request == name || c.request.starts_with(name + "/");
    });
  });
}

// The RdmaConfigs for this driver in the order they apply: class configs, then claim configs,
// each in the order given.
Result<RdmaConfig> mergedConfig(const nlohmann::json& devices_status,
                                const std::vector<ClaimedPort>& claimed, RdmaConfig base) {
  const nlohmann::json* configs = jsonMember(devices_status, "config");
  if (configs == nullptr || !configs->is_array()) {
    return base;
  }
  std::vector<size_t> order(configs->size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return jsonStringMember((*configs)[a], "source") == "FromClass" &&
           jsonStringMember((*configs)[b], "source") != "FromClass";
  });
  std::vector<std::string> errors;
  for (const size_t i : order) {
    const nlohmann::json& entry = (*configs)[i];
    const nlohmann::json* opaque = jsonMember(entry, "opaque");
    if (opaque == nullptr || jsonStringMember(*opaque, "driver") != kDraDriverName ||
        !covers(jsonMember(entry, "requests"), claimed)) {
      continue;
    }
    const std::string path =
        jsonIndexPath("status.allocation.devices.config", i) + ".opaque.parameters";
    const nlohmann::json* parameters = jsonMember(*opaque, "parameters");
    if (parameters == nullptr) {
      errors.push_back(path + ": missing; an RdmaConfig object is expected");
      continue;
    }
    auto config = parseRdmaConfig(*parameters, path);
    if (!config.ok()) {
      errors.push_back(config.error().message);
      continue;
    }
    base = mergeRdmaConfig(base, *config);
  }
  if (!errors.empty()) {
    return makeError(joinStrings(errors, "; "));
  }
  const auto& policy = base.nccl.gid_policy;
  if (policy.range && policy.range->family != policy.family) {
    return makeError("the RdmaConfigs together give an addrRange outside their addrFamily");
  }
  return base;
}

Json claimCdiSpec(const ClaimRef& ref, const std::vector<ClaimedPort>& claimed, const NcclEnv& env,
                  const ClaimFile* nccl_conf, const NcclPoolOptions& nccl, const CdiHooks& hooks) {
  std::vector<CdiDevice> devices;
  devices.reserve(claimed.size());
  for (const auto& c : claimed) {
    devices.push_back({ref.uid + "-" + c.port.name, c.port.device->uverbsDevicePath()});
  }
  std::vector<std::string> variables;
  for (const auto& [name, value] : env) {
    if (name.starts_with("KUBE_RDMA_")) {
      variables.push_back(name + "=" + value);
    }
  }
  variables.push_back("KUBE_RDMA_CLAIM=" + ref.namespace_name + "/" + ref.name);
  Json mounts = Json::array();
  if (nccl_conf != nullptr) {
    mounts.push_back({{"hostPath", nccl_conf->path},
                      {"containerPath", nccl.nccl_conf_path},
                      {"options", {"ro", "nosuid", "nodev", "bind"}}});
  }
  return cdiSpec(kDraCdiKind, devices, variables, std::move(mounts), hooks);
}

} // namespace

std::string claimCdiSpecPath(const std::string& cdi_dir, const std::string& uid) {
  return cdiSpecFile(cdi_dir, kDraCdiKind, "_" + uid);
}

std::string claimNcclConfPath(const std::string& state_dir, const std::string& uid) {
  return state_dir + "/nccl-claim-" + uid + ".conf";
}

Result<PreparedClaim> renderClaim(const nlohmann::json& claim, const ClaimRef& ref,
                                  const NodeTopology& topology, const PrepareContext& context) {
  const std::string what = "ResourceClaim " + ref.namespace_name + "/" + ref.name;
  if (!isUid(ref.uid)) {
    return makeError(what + ": the kubelet's claim UID \"" + ref.uid +
                     "\" is not a UID (lower-case letters, digits and '-')");
  }
  const std::string uid = metadataString(claim, "uid");
  if (uid != ref.uid) {
    return makeError(what + " has metadata.uid \"" + uid + "\", the kubelet asked for \"" +
                     ref.uid + "\" (deleted and re-created?)");
  }
  const nlohmann::json* status = jsonMember(claim, "status");
  const nlohmann::json* allocation = status ? jsonMember(*status, "allocation") : nullptr;
  const nlohmann::json* devices_status = allocation ? jsonMember(*allocation, "devices") : nullptr;
  const nlohmann::json* results = devices_status ? jsonMember(*devices_status, "results") : nullptr;
  if (results == nullptr || !results->is_array()) {
    return makeError(what + " has no status.allocation.devices.results: not allocated");
  }

  const std::vector<NodePool> pools = buildPools(topology, context.config);
  const std::vector<DraPort> published = publishedPorts(topology, pools);
  std::vector<ClaimedPort> claimed;
  for (size_t i = 0; i < results->size(); ++i) {
    const nlohmann::json& result = (*results)[i];
    if (jsonStringMember(result, "driver") != kDraDriverName ||
        jsonStringMember(result, "pool") != context.node_name) {
      continue;
    }
    const std::string device = jsonStringMember(result, "device");
    const auto port = std::find_if(published.begin(), published.end(),
                                   [&](const DraPort& p) { return p.name == device; });
    if (port == published.end()) {
      return makeError(what + ": " + jsonIndexPath("status.allocation.devices.results", i) +
                       ".device \"" + device + "\" is not a device this node publishes");
    }
    if (port->device->uverbs.empty()) {
      return makeError(what + ": " + device + " (" + port->device->name +
                       ") has no uverbs device node, so a container could not use it");
    }
    claimed.push_back(ClaimedPort{*port, static_cast<size_t>(port - published.begin()),
                                  jsonStringMember(result, "request"),
                                  jsonStringMember(result, "shareID")});
  }
  // NCCL_IB_HCA and the CDI devices in the node's order, whatever order the scheduler chose.
  std::stable_sort(claimed.begin(), claimed.end(), [](const auto& a, const auto& b) {
    return a.published_index < b.published_index;
  });
  if (claimed.empty()) {
    return makeError(what + " has no device of driver " + kDraDriverName + " in pool " +
                     context.node_name);
  }
  // A shared port can be allocated to two requests of one claim: the container gets it once.
  std::vector<ClaimedPort> ports;
  std::unique_copy(
      claimed.begin(), claimed.end(), std::back_inserter(ports),
      [](const auto& a, const auto& b) { return a.published_index == b.published_index; });

  RdmaConfig base;
  base.nccl = ports.front().port.pool->spec.nccl;
  base.memlock = context.config.memlock.limit;
  auto config = mergedConfig(*devices_status, claimed, std::move(base));
  if (!config.ok()) {
    return makeError(what + ": " + config.error().message);
  }

  // The claim's ports as one pool, so the NCCL settings name exactly them.
  NodePool pool{ports.front().port.pool->spec, {}};
  pool.spec.nccl = config->nccl;
  for (const auto& c : ports) {
    if (pool.hcas.empty() || pool.hcas.back().device != c.port.device->name) {
      pool.hcas.push_back(PoolHca{c.port.device->name, {}});
    }
    pool.hcas.back().ports.push_back(c.port.port->number);
  }
  auto env = computeNcclSettings(topology, pool, pool.deviceNames());
  if (!env.ok()) {
    return makeError(what + ": " + env.error().message);
  }

  PreparedClaim prepared;
  if (config->nccl.nccl_conf_enabled) {
    NcclEnv settings;
    std::copy_if(env->begin(), env->end(), std::back_inserter(settings),
                 [](const auto& s) { return !s.first.starts_with("KUBE_RDMA_"); });
    auto text = renderNcclConf(settings);
    if (!text.ok()) {
      return makeError(what + ": " + text.error().message);
    }
    prepared.files.push_back(ClaimFile{claimNcclConfPath(context.state_dir, ref.uid), *text});
  }
  CdiHooks hooks{context.config.memlock, context.config.nccl_hook, nullptr};
  hooks.memlock.limit = config->memlock;
  const ClaimFile* nccl_conf = prepared.files.empty() ? nullptr : &prepared.files.front();
  // Each container of each pod sharing the claim resolves its own GID index: two pods are two
  // network namespaces.
  const bool roce = std::any_of(ports.begin(), ports.end(), [](const ClaimedPort& c) {
    return c.port.port->link_layer == LinkLayer::kEthernet;
  });
  if (nccl_conf != nullptr && roce && resolvesGidPerContainer(hooks.nccl, config->nccl)) {
    hooks.per_container = &config->nccl;
  }
  const Json spec = claimCdiSpec(ref, ports, *env, nccl_conf, config->nccl, hooks);
  prepared.files.push_back(
      ClaimFile{claimCdiSpecPath(context.cdi_dir, ref.uid), spec.dump(2) + "\n"});
  for (const auto& c : claimed) {
    prepared.devices.push_back(
        PreparedDevice{{c.request},
                       context.node_name,
                       c.port.name,
                       {std::string(kDraCdiKind) + "=" + ref.uid + "-" + c.port.name},
                       c.share_id});
  }
  return prepared;
}

} // namespace kube_rdma
