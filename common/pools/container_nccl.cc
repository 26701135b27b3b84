#include "common/pools/container_nccl.h"

#include <algorithm>
#include <string>

#include "common/util/strings.h"
#include "common/node/sysfs_attributes.h"

namespace kube_rdma {

namespace {

const std::string* ibHcaOf(const NcclEnv& node_conf) {
  const auto hca = std::find_if(node_conf.begin(), node_conf.end(),
                                [](const auto& setting) { return setting.first == "NCCL_IB_HCA"; });
  return hca == node_conf.end() ? nullptr : &hca->second;
}

} // namespace

std::vector<std::pair<std::string, uint32_t>> hcaPortsOf(const NcclEnv& node_conf) {
  std::vector<std::pair<std::string, uint32_t>> ports;
  if (const std::string* hca = ibHcaOf(node_conf)) {
    for (const auto& entry : parseNcclIbHca(*hca).entries) {
      if (entry.port >= 0) {
        ports.emplace_back(entry.name, static_cast<uint32_t>(entry.port));
      }
    }
  }
  return ports;
}

Result<ContainerNcclConf> resolveContainerNcclConf(const NcclEnv& node_conf,
                                                   const NodeTopology& topology,
                                                   const GidSelectionPolicy& policy) {
  const std::string* hca = ibHcaOf(node_conf);
  if (hca == nullptr) {
    return makeError("the node's nccl.conf has no NCCL_IB_HCA");
  }
  ContainerNcclConf out;
  std::vector<const Port*> ports;
  for (const auto& entry : parseNcclIbHca(*hca).entries) {
    const RdmaDevice* device = topology.findDevice(entry.name);
    const Port* port = nullptr;
    if (device != nullptr) {
      const auto it = std::find_if(device->ports.begin(), device->ports.end(), [&](const Port& p) {
        return static_cast<int>(p.number) == entry.port;
      });
      port = it == device->ports.end() ? nullptr : &*it;
    }
    if (entry.port < 0) {
      return makeError("NCCL_IB_HCA entry " + entry.name + " names no port");
    }
    if (port == nullptr) {
      return makeError("NCCL_IB_HCA entry " + entry.name + ":" + std::to_string(entry.port) +
                       (device == nullptr ? ": no such RDMA device" : ": no such port"));
    }
    out.ports.push_back({entry.name, static_cast<uint32_t>(entry.port)});
    ports.push_back(port);
  }
  out.choice = chooseGidIndex(ports, policy, topology.addresses);
  out.settings = node_conf;
  if (!out.choice.index) {
    return out;
  }
  out.own_gid_index = true;
  const std::string index = std::to_string(*out.choice.index);
  if (auto gid = std::find_if(out.settings.begin(), out.settings.end(),
                              [](const auto& s) { return s.first == "NCCL_IB_GID_INDEX"; });
      gid != out.settings.end()) {
    gid->second = index;
    return out;
  }
  auto after = std::find_if(out.settings.begin(), out.settings.end(),
                            [](const auto& s) { return s.first == "NCCL_IB_DISABLE"; });
  after = after == out.settings.end()
              ? std::find_if(out.settings.begin(), out.settings.end(),
                             [](const auto& s) { return s.first == "NCCL_IB_HCA"; })
              : after;
  out.settings.insert(after + 1, {"NCCL_IB_GID_INDEX", index});
  return out;
}

namespace {

std::string portIndexes(const ContainerNcclConf& resolved) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < resolved.ports.size(); ++i) {
    const auto& index = resolved.choice.port_indexes[i];
    parts.push_back(resolved.ports[i].device + ":" + std::to_string(resolved.ports[i].port) + "=" +
                    (index ? std::to_string(*index) : "none"));
  }
  return joinStrings(parts, ",");
}

ContainerGidDecision decided(NcclHookOutcome outcome, LogLevel level, std::string message,
                             std::vector<LogField> fields) {
  ContainerGidDecision decision;
  decision.outcome = outcome;
  decision.level = level;
  decision.message = std::move(message);
  decision.fields = std::move(fields);
  return decision;
}

} // namespace

NcclHookArgs parseNcclHookArgs(const std::vector<std::string>& args) {
  NcclHookArgs o;
  for (const std::string& arg : args) {
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (name == "--container-path" && value.starts_with("/")) {
      o.container_path = value;
    } else if (name == "--addr-family" && (value == "AF_INET" || value == "AF_INET6")) {
      o.policy.family = value == "AF_INET" ? GidFamily::kIPv4 : GidFamily::kIPv6;
    } else if (name == "--addr-range") {
      auto range = parseCidr(value);
      if (range) {
        o.policy.range = *range;
      } else {
        o.problem = "--addr-range: " + range.error().message;
      }
    } else if (name == "--sysfs-root" && !value.empty()) {
      o.sysfs_root = value;
    } else if (name == "--proc-root" && !value.empty()) {
      o.proc_root = value;
    } else if (name == "--log-file") {
      o.log_file = value;
    } else if (name == "--deadline-seconds") {
      const auto seconds = parseWhole<unsigned>(value);
      if (seconds && *seconds >= 1 && *seconds <= 60) {
        o.deadline_seconds = *seconds;
      } else {
        o.problem = "--deadline-seconds: \"" + value + "\" is not a whole number of 1 to 60";
      }
    } else if (arg == "--help" || arg == "-h") {
      o.help = true;
    } else if (arg == "--version") {
      o.version = true;
    } else {
      o.problem = "bad argument \"" + arg + "\"";
    }
  }
  return o;
}

bool rdmaNetnsIsExclusive(const std::string& sysfs_root) {
  auto mode = readAttribute(sysfs_root + "/module/ib_core/parameters/netns_mode");
  return mode && trimmed(*mode) == "N";
}

ContainerGidDecision decideContainerGid(const ContainerSpec& spec, const ContainerGidInputs& in) {
  const LogField pod{"pod", spec.pod};
  const LogField container{"container", in.container_id};
  if (!spec.own_network_namespace) {
    return decided(NcclHookOutcome::kHostNetwork, LogLevel::kInfo,
                   "host network: the node's NCCL settings are the container's", {pod, container});
  }
  if (auto set = envValue(spec.env, "NCCL_IB_GID_INDEX");
      set && (spec.nri_gid_index.empty() || *set != spec.nri_gid_index)) {
    return decided(NcclHookOutcome::kUserSet, LogLevel::kInfo,
                   "NCCL_IB_GID_INDEX is set in the container's environment, which NCCL prefers "
                   "to nccl.conf: left alone",
                   {pod, container, {"value", *set}});
  }
  if (in.cluster_network_only) {
    return decided(NcclHookOutcome::kNoOwnGid, LogLevel::kInfo,
                   "only loopback and veth interfaces, no GID of the container's own: the node's "
                   "NCCL settings stay",
                   {pod, container, {"outcome", toString(GidChoice::Outcome::kNoOwnGid)}});
  }
  std::string node_conf;
  for (const auto& [destination, source] : spec.mounts) {
    node_conf = destination == in.container_path ? source : node_conf;
  }
  if (node_conf.empty()) {
    return decided(NcclHookOutcome::kNoNcclConf, LogLevel::kWarn,
                   "the container has no nccl.conf mount: nothing to resolve",
                   {pod, container, {"container_path", in.container_path}});
  }
  auto conf_text = readAttribute(node_conf, kMaxConfigFileBytes);
  if (!conf_text) {
    return decided(NcclHookOutcome::kError, LogLevel::kError,
                   "cannot read the node's nccl.conf, left as it is",
                   {pod, container, {"error", conf_text.error().message}});
  }
  DiscoveryRoots roots = in.roots;
  if (in.exclusive_rdma_netns) {
    const bool mounts_sys = std::any_of(spec.mounts.begin(), spec.mounts.end(),
                                        [](const auto& mount) { return mount.first == "/sys"; });
    if (spec.rootfs.empty() || !mounts_sys) {
      return decided(NcclHookOutcome::kExclusiveNetns,
                     spec.rootfs.empty() ? LogLevel::kInfo : LogLevel::kWarn,
                     spec.rootfs.empty()
                         ? "exclusive RDMA netns mode: the pod's own devices show only in a sysfs "
                           "of its namespace, which the runtime mounts later; "
                           "kube-rdma-nccl-hook resolves the index there"
                         : "exclusive RDMA netns mode and the container mounts no /sys: its own "
                           "devices cannot be read, nccl.conf left as the node wrote it",
                     {pod, container});
    }
    roots.sysfs_root = spec.rootfs + "/sys";
  }
  const NcclEnv node_settings = parseNcclConf(*conf_text);
  // Only the granted ports, each table read up to the container's own entry.
  const NodeTopology topology =
      discoverPorts(roots, hcaPortsOf(node_settings), {GidTables::kUntilSelected, {in.policy}});
  // Without the namespace's addresses every GID would look like another's.
  const std::string addresses_path = roots.proc_root + "/net/fib_trie";
  for (const auto& warning : topology.warnings) {
    if (warning.path == addresses_path) {
      return decided(NcclHookOutcome::kError, LogLevel::kError,
                     "cannot read the container's addresses, nccl.conf left as the node wrote it",
                     {pod, container, {"path", addresses_path}, {"error", warning.message}});
    }
  }
  auto resolved = resolveContainerNcclConf(node_settings, topology, in.policy);
  if (!resolved) {
    return decided(NcclHookOutcome::kError, LogLevel::kError,
                   "cannot resolve the container's GID index, nccl.conf left as the node wrote it",
                   {pod, container, {"error", resolved.error().message}});
  }
  if (!resolved->own_gid_index) {
    // A veth-only pod has no GID of its own: the host's (hostNetwork, bridge CNI) stays right.
    const auto outcome = resolved->choice.outcome;
    return decided(
        outcome == GidChoice::Outcome::kPortsDisagree ? NcclHookOutcome::kPortsDisagree
        : outcome == GidChoice::Outcome::kNoRocePort  ? NcclHookOutcome::kNoRocePort
                                                      : NcclHookOutcome::kNoOwnGid,
        outcome == GidChoice::Outcome::kPortsDisagree ? LogLevel::kWarn : LogLevel::kInfo,
        "no single GID index of the container's namespace: the node's NCCL settings "
        "stay",
        {pod, container, {"outcome", toString(outcome)}, {"ports", portIndexes(*resolved)}});
  }
  ContainerGidDecision decision =
      decided(NcclHookOutcome::kOwnGidIndex, LogLevel::kInfo, "the container's own GID index",
              {pod,
               container,
               {"gid_index", std::to_string(*resolved->choice.index)},
               {"ports", portIndexes(*resolved)}});
  decision.node_conf = node_conf;
  decision.resolved = std::move(*resolved);
  return decision;
}

} // namespace kube_rdma
