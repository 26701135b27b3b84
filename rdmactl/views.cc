#include "rdmactl/views.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "common/node/gid_selection.h"
#include "common/pools/pools.h"
#include "common/util/strings.h"
#include "common/node/topology.h"

namespace kube_rdma {
namespace {

constexpr const char* kBareLinkLocal = "fe80:0000:0000:0000:0000:0000:0000:0000";

std::string numaText(const std::optional<int>& numa) {
  return numa ? std::to_string(*numa) : "none";
}

nlohmann::json numaJson(const std::optional<int>& numa) {
  return numa ? nlohmann::json(*numa) : nlohmann::json(nullptr);
}

std::string netdevState(const NetdevStates& states, const std::string& netdev) {
  const auto it = states.find(netdev);
  return it == states.end() ? "Unknown" : it->second;
}

} // namespace

std::string renderDevicesText(const NodeTopology& topology, const NetdevStates& states) {
  std::ostringstream out;
  const std::string management = managementDevice(topology);
  for (const auto& d : topology.devices) {
    for (const auto& p : d.ports) {
      const std::string netdev = p.netdev.empty() ? "(none)" : p.netdev;
      out << d.name << " port " << p.number << " ==> " << netdev << " ("
          << (p.netdev.empty() ? "Unknown" : netdevState(states, p.netdev)) << ")  "
          << (d.pci_address.empty() ? "-" : d.pci_address) << "  " << d.hca_type << " - "
          << d.board_id << "  fw " << d.fw_ver << "  " << toString(p.state) << "/"
          << p.phys_state_name << "  " << toString(p.link_layer) << " " << p.rate << "  numa "
          << numaText(d.numa_node);
      if (d.name == management) {
        out << "  [management: default route via " << topology.management_netdev << "]";
      }
      if (d.is_vf) {
        out << "  [VF of " << d.pf_pci_address << "]";
      }
      out << "\n";
    }
  }
  if (topology.devices.empty()) {
    out << "no RDMA devices\n";
  }
  for (const auto& gpu : topology.gpus) {
    const auto closest = closestHcas(gpu, topology);
    out << "GPU " << gpu.pci_address << " " << gpu.device_id << "  numa " << numaText(gpu.numa_node)
        << "  closest HCA: "
        << (closest.empty() ? "none"
                            : joinStrings(closest, ",") + " (" +
                                  toString(pathType(gpu, *topology.findDevice(closest[0]))) + ")")
        << "\n";
  }
  return out.str();
}

std::string renderDevicesJson(const NodeTopology& topology, const NetdevStates& states) {
  nlohmann::json devices = nlohmann::json::array();
  const std::string management = managementDevice(topology);
  for (const auto& d : topology.devices) {
    nlohmann::json ports = nlohmann::json::array();
    for (const auto& p : d.ports) {
      ports.push_back({{"port", p.number},
                       {"state", toString(p.state)},
                       {"phys_state", p.phys_state_name},
                       {"link_layer", toString(p.link_layer)},
                       {"rate", p.rate},
                       {"rate_gbps", p.rate_gbps},
                       {"lid", p.lid},
                       {"gid_table_len", p.gid_table_len},
                       {"netdev", p.netdev},
                       {"netdev_state", p.netdev.empty() ? "" : netdevState(states, p.netdev)}});
    }
    devices.push_back({{"name", d.name},
                       {"pci_address", d.pci_address},
                       {"hca_type", d.hca_type},
                       {"board_id", d.board_id},
                       {"fw_ver", d.fw_ver},
                       {"node_guid", d.node_guid},
                       {"vendor_id", d.vendor_id},
                       {"device_id", d.device_id},
                       {"driver", d.driver},
                       {"numa_node", numaJson(d.numa_node)},
                       {"local_cpulist", d.local_cpulist},
                       {"netdevs", d.netdevs},
                       {"uverbs", d.uverbs},
                       {"management", d.name == management},
                       {"is_vf", d.is_vf},
                       {"pf_pci_address", d.pf_pci_address},
                       {"vf_pci_addresses", d.vf_pci_addresses},
                       {"pcie_path", d.pcie_path},
                       {"ports", ports}});
  }
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& gpu : topology.gpus) {
    const auto closest = closestHcas(gpu, topology);
    gpus.push_back(
        {{"pci_address", gpu.pci_address},
         {"device_id", gpu.device_id},
         {"numa_node", numaJson(gpu.numa_node)},
         {"pcie_path", gpu.pcie_path},
         {"closest_hcas", closest},
         {"path_type",
          closest.empty() ? "" : toString(pathType(gpu, *topology.findDevice(closest[0])))}});
  }
  nlohmann::json warnings = nlohmann::json::array();
  for (const auto& w : topology.warnings) {
    warnings.push_back({{"path", w.path}, {"message", w.message}});
  }
  const nlohmann::json out{{"source", topology.source},
                           {"management_netdev", topology.management_netdev},
                           {"devices", devices},
                           {"gpus", gpus},
                           {"warnings", warnings}};
  return out.dump(2) + "\n";
}

Result<std::vector<GidRow>> gidRows(const NodeTopology& topology, const std::string& device) {
  if (!device.empty() && topology.findDevice(device) == nullptr) {
    std::vector<std::string> known;
    for (const auto& d : topology.devices) {
      known.push_back(d.name);
    }
    return makeError("no RDMA device \"" + device +
                     "\" (devices: " + (known.empty() ? "none" : joinStrings(known, ", ")) + ")");
  }
  std::vector<GidRow> rows;
  for (const auto& d : topology.devices) {
    if (!device.empty() && d.name != device) {
      continue;
    }
    for (const auto& p : d.ports) {
      for (const auto& g : p.gids) {
        if (g.gid == kBareLinkLocal) {
          continue;
        }
        rows.push_back({d.name, p.number, g.index, g.gid, g.ipv4, toString(g.type), g.netdev,
                        gidInNamespace(g, topology.addresses) ? "this" : "other"});
      }
    }
  }
  return rows;
}

std::string renderGidsText(const std::vector<GidRow>& rows) {
  std::ostringstream out;
  out << "DEV\tPORT\tINDEX\tGID\tIPv4\tVER\tDEV\tNETNS\n";
  out << "---\t----\t-----\t---\t----\t---\t---\t-----\n";
  for (const auto& r : rows) {
    out << r.device << "\t" << r.port << "\t" << r.index << "\t" << r.gid << "\t" << r.ipv4 << "\t"
        << r.version << "\t" << r.netdev << "\t" << r.netns << "\n";
  }
  out << "n_gids_found=" << rows.size() << "\n";
  return out.str();
}

std::string renderGidsJson(const std::vector<GidRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows) {
    out.push_back({{"device", r.device},
                   {"port", r.port},
                   {"index", r.index},
                   {"gid", r.gid},
                   {"ipv4", r.ipv4},
                   {"version", r.version},
                   {"netdev", r.netdev},
                   {"netns", r.netns}});
  }
  return out.dump(2) + "\n";
}

Result<PoolNcclEnv> poolNcclEnv(const NodeTopology& topology, const PluginConfig& config,
                                const std::string& pool) {
  const auto pools = buildPools(topology, config);
  const NodePool* chosen = nullptr;
  std::vector<std::string> known;
  for (const auto& p : pools) {
    known.push_back(p.spec.resource_name + " (" + std::to_string(p.hcas.size()) + " HCAs)");
    if (chosen == nullptr && (pool.empty() ? !p.hcas.empty() : p.spec.resource_name == pool)) {
      chosen = &p;
    }
  }
  if (chosen == nullptr) {
    return makeError(pool.empty()
                         ? "no pool has HCAs on this node (pools: " + joinStrings(known, ", ") + ")"
                         : "no pool \"" + pool + "\" (pools: " + joinStrings(known, ", ") + ")");
  }
  if (chosen->hcas.empty()) {
    return makeError("pool " + chosen->spec.resource_name + " has no HCAs on this node");
  }
  const auto devices = chosen->deviceNames();
  auto env = computeNcclSettings(topology, *chosen, devices);
  if (!env) {
    return makeError("pool " + chosen->spec.resource_name + ": " + env.error().message);
  }
  return PoolNcclEnv{chosen->spec.resource_name, devices, std::move(*env)};
}

Result<std::string> renderNcclEnvJson(const PoolNcclEnv& settings) {
  auto conf = renderNcclConf(settings.env);
  if (!conf) {
    return conf.error();
  }
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [name, value] : settings.env) {
    env[name] = value;
  }
  // nlohmann sorts object keys; the ordered list is in nccl_conf.
  const nlohmann::json out{
      {"pool", settings.pool}, {"devices", settings.devices}, {"env", env}, {"nccl_conf", *conf}};
  return out.dump(2) + "\n";
}

} // namespace kube_rdma
