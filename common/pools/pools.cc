#include "common/pools/pools.h"

#include <fnmatch.h>

#include <algorithm>
#include <iterator>

#include "common/node/gid_selection.h"
#include "common/util/strings.h"

namespace kube_rdma {
namespace {

bool anyGlob(const std::vector<std::string>& globs, const std::string& name) {
  return std::any_of(globs.begin(), globs.end(), [&](const std::string& glob) {
    return fnmatch(glob.c_str(), name.c_str(), 0) == 0;
  });
}

// The port's own netdev when known (RoCE: ndevs of GID 0), else the PCI function's netdevs.
std::vector<std::string> portNetdevs(const RdmaDevice& device, const Port& port) {
  return port.netdev.empty() ? device.netdevs : std::vector<std::string>{port.netdev};
}

// NCCL_SOCKET_IFNAME for a container that may run on the host's network or on the pod network
// (the plugin cannot tell which): the node's management netdev and the CNI's eth0, exact names,
// so NCCL finds an interface either way and never a data netdev: "=bond0,eth0", or "=eth0".
std::string socketIfnameFor(const std::string& management_netdev) {
  return management_netdev == "eth0" ? "=eth0" : "=" + management_netdev + ",eth0";
}

} // namespace

std::vector<std::string> NodePool::deviceNames() const {
  std::vector<std::string> out;
  for (const auto& hca : hcas) {
    out.push_back(hca.device);
  }
  return out;
}

std::vector<HcaPort> NodePool::ports() const {
  std::vector<HcaPort> out;
  for (const auto& hca : hcas) {
    for (uint32_t port : hca.ports) {
      out.push_back(HcaPort{hca.device, port});
    }
  }
  return out;
}

std::string managementDevice(const NodeTopology& topology) {
  if (topology.management_netdev.empty()) {
    return "";
  }
  for (const auto& device : topology.devices) {
    if (listContains(device.netdevs, topology.management_netdev) ||
        std::any_of(device.ports.begin(), device.ports.end(),
                    [&](const Port& port) { return port.netdev == topology.management_netdev; })) {
      return device.name;
    }
  }
  return "";
}

std::string toString(PoolRule rule) {
  static constexpr const char* kNames[] = {"management HCA",
                                           "SR-IOV VF",
                                           "linkLayer",
                                           "deviceNames",
                                           "netdevNames",
                                           "vendors",
                                           "deviceIDs",
                                           "drivers",
                                           "pciAddresses",
                                           "exclude",
                                           "taken by an earlier pool"};
  static_assert(std::size(kNames) == static_cast<size_t>(PoolRule::kEarlierPool) + 1);
  return kNames[static_cast<size_t>(rule)];
}

// IDs and PCI addresses compare as written: sysfs prints them in lower case and the config parser
// lower-cases what the operator wrote.
std::optional<PoolRule> selectorRejection(const PoolSelector& s, const RdmaDevice& device,
                                          const Port& port, bool is_management) {
  if (is_management && !s.include_management) {
    return PoolRule::kManagement;
  }
  if (device.is_vf && !s.include_vfs) {
    return PoolRule::kVf;
  }
  if (s.link_layer && port.link_layer != *s.link_layer) {
    return PoolRule::kLinkLayer;
  }
  if (!s.device_names.empty() && !anyGlob(s.device_names, device.name)) {
    return PoolRule::kDeviceNames;
  }
  if (!s.netdev_names.empty()) {
    const auto netdevs = portNetdevs(device, port);
    if (std::none_of(netdevs.begin(), netdevs.end(),
                     [&](const std::string& n) { return anyGlob(s.netdev_names, n); })) {
      return PoolRule::kNetdevNames;
    }
  }
  const auto listed = [](const std::vector<std::string>& list, const std::string& value) {
    return list.empty() || listContains(list, value);
  };
  if (!listed(s.vendors, device.vendor_id)) {
    return PoolRule::kVendors;
  }
  if (!listed(s.device_ids, device.device_id)) {
    return PoolRule::kDeviceIds;
  }
  if (!listed(s.drivers, device.driver)) {
    return PoolRule::kDrivers;
  }
  if (!listed(s.pci_addresses, device.pci_address)) {
    return PoolRule::kPciAddresses;
  }
  if (anyGlob(s.exclude, device.name)) {
    return PoolRule::kExclude;
  }
  return std::nullopt;
}

std::vector<PoolExplanation> explainPools(const NodeTopology& topology,
                                          const PluginConfig& config) {
  std::vector<PoolExplanation> out;
  for (const auto& spec : config.pools) {
    out.push_back(PoolExplanation{NodePool{spec, {}}, {}});
  }
  const std::string management = managementDevice(topology);
  for (const auto& device : topology.devices) {
    for (const auto& port : device.ports) {
      const HcaPort where{device.name, port.number};
      std::string taken_by;
      for (auto& explained : out) {
        NodePool& pool = explained.pool;
        if (auto rule =
                selectorRejection(pool.spec.selector, device, port, device.name == management)) {
          explained.left_out.push_back({where, *rule, ""});
        } else if (!taken_by.empty()) {
          explained.left_out.push_back({where, PoolRule::kEarlierPool, taken_by});
        } else {
          if (pool.hcas.empty() || pool.hcas.back().device != device.name) {
            pool.hcas.push_back(PoolHca{device.name, {}});
          }
          pool.hcas.back().ports.push_back(port.number);
          taken_by = pool.spec.resource_name;
        }
      }
    }
  }
  return out;
}

std::vector<NodePool> buildPools(const NodeTopology& topology, const PluginConfig& config) {
  std::vector<NodePool> pools;
  for (auto& explained : explainPools(topology, config)) {
    pools.push_back(std::move(explained.pool));
  }
  return pools;
}

Result<NcclEnv> computeNcclSettings(const NodeTopology& topology, const NodePool& pool,
                                    const std::vector<std::string>& granted_devices) {
  const auto pool_devices = pool.deviceNames();
  for (const auto& name : granted_devices) {
    if (!listContains(pool_devices, name)) {
      return makeError("device " + name + " is not in pool " + pool.spec.resource_name);
    }
  }
  std::vector<HcaPort> active;
  std::vector<const Port*> active_ports;
  std::vector<std::string> devices;
  std::vector<std::string> netdevs;
  for (const auto& hca : pool.hcas) { // pool order, whatever order the IDs came in
    if (!listContains(granted_devices, hca.device)) {
      continue;
    }
    devices.push_back(hca.device);
    const RdmaDevice* device = topology.findDevice(hca.device);
    if (device == nullptr) {
      continue; // vanished since the pool was built: health reports it
    }
    for (const auto& port : device->ports) {
      if (std::find(hca.ports.begin(), hca.ports.end(), port.number) == hca.ports.end()) {
        continue;
      }
      for (const auto& netdev : portNetdevs(*device, port)) {
        if (!listContains(netdevs, netdev)) {
          netdevs.push_back(netdev);
        }
      }
      if (port.active()) {
        active.push_back(HcaPort{device->name, port.number});
        active_ports.push_back(&port);
      }
    }
  }
  if (active.empty()) {
    return makeError("no ACTIVE port of pool " + pool.spec.resource_name + " on " +
                     joinStrings(devices, ","));
  }
  auto hca = renderIbHca(active);
  if (!hca.ok()) {
    return hca.error();
  }
  NcclEnv env{{"NCCL_IB_HCA", *hca}, {"NCCL_IB_DISABLE", "0"}};
  const NcclPoolOptions& nccl = pool.spec.nccl;
  if (nccl.gid_index_mode == GidIndexMode::kFixed) {
    env.emplace_back("NCCL_IB_GID_INDEX", std::to_string(nccl.gid_index));
  } else if (nccl.gid_index_mode == GidIndexMode::kAgreed) {
    const GidChoice choice = chooseGidIndex(active_ports, nccl.gid_policy, topology.addresses);
    if (choice.index) {
      env.emplace_back("NCCL_IB_GID_INDEX", std::to_string(*choice.index));
    }
  }
  const bool operator_ifname =
      std::any_of(nccl.env.begin(), nccl.env.end(),
                  [](const auto& setting) { return setting.first == "NCCL_SOCKET_IFNAME"; });
  if (!topology.management_netdev.empty() && !operator_ifname) {
    env.emplace_back("NCCL_SOCKET_IFNAME", socketIfnameFor(topology.management_netdev));
  }
  env.emplace_back("KUBE_RDMA_DEVICES", joinStrings(devices, ","));
  env.emplace_back("KUBE_RDMA_NETDEVS", joinStrings(netdevs, ","));
  env.insert(env.end(), nccl.env.begin(), nccl.env.end());
  return env;
}

} // namespace kube_rdma
