#include "plugin/pool_resource_manager.h"

#include <algorithm>

#include "plugin/preferred_allocation.h"

namespace kube_rdma {
namespace {

constexpr const char* kRdmaCm = "/dev/infiniband/rdma_cm";

std::string joinIds(const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) {
    out += (out.empty() ? "" : ", ") + id;
  }
  return out;
}

// Exclusive IDs are PCI addresses (stable across renames); fall back to the name without one.
std::string exclusiveId(const RdmaDevice& device) {
  return device.pci_address.empty() ? device.name : device.pci_address;
}

} // namespace

std::vector<std::string> PoolInventory::hcas() const {
  std::vector<std::string> out;
  for (const auto& p : ports) {
    if (std::find(out.begin(), out.end(), p.device) == out.end()) {
      out.push_back(p.device);
    }
  }
  return out;
}

bool hcaUsable(const PoolInventory& pool, const NodeHealthView& node, const std::string& hca) {
  const RdmaDevice* device = node.topology ? node.topology->findDevice(hca) : nullptr;
  if (!device || device->uverbs.empty() || !node.uverbs_present.count(device->uverbs)) {
    return false;
  }
  for (const auto& p : pool.ports) {
    if (p.device != hca) {
      continue;
    }
    for (const auto& port : device->ports) {
      if (port.number == p.port && port.active()) {
        return true;
      }
    }
  }
  return false;
}

std::vector<PluginDevice> poolDevices(const PoolInventory& pool, const NodeHealthView& node) {
  std::vector<PluginDevice> out;
  const auto hcas = pool.hcas();
  if (!pool.exclusive) {
    const bool any = std::any_of(hcas.begin(), hcas.end(),
                                 [&](const auto& h) { return hcaUsable(pool, node, h); });
    for (uint32_t i = 0; i < pool.shared_count; ++i) {
      out.push_back({std::to_string(i), any, std::nullopt});
    }
    return out;
  }
  for (const auto& hca : hcas) {
    const RdmaDevice* device = node.topology ? node.topology->findDevice(hca) : nullptr;
    if (!device) {
      continue; // vanished: its ID goes; it comes back with the device
    }
    out.push_back({exclusiveId(*device), hcaUsable(pool, node, hca), device->numa_node});
  }
  return out;
}

ContainerAllocation buildAllocation(const PoolInventory& pool, const NodeTopology& topology,
                                    const std::vector<std::string>& granted, const NcclEnv& env,
                                    const std::string& nccl_conf_host_path) {
  ContainerAllocation out;
  for (const auto& hca : granted) {
    const RdmaDevice* device = topology.findDevice(hca);
    if (device && !device->uverbs.empty()) {
      const std::string path = device->uverbsDevicePath();
      out.devices.push_back({path, path, "rw"});
    }
    if (!pool.cdi_kind.empty()) {
      out.cdi_devices.push_back(pool.cdi_kind + "=" + hca);
    }
  }
  out.devices.push_back({kRdmaCm, kRdmaCm, "rw"});
  out.envs = env;
  if (pool.mount_nccl_conf && !nccl_conf_host_path.empty()) {
    out.mounts.push_back({pool.nccl_conf_container_path, nccl_conf_host_path, true});
  }
  return out;
}

PoolResourceManager::PoolResourceManager(PoolInventory pool, NcclEnvFn nccl_env,
                                         const StateWriter& state)
    : pool_(std::move(pool)), nccl_env_(std::move(nccl_env)), state_(state) {}

bool PoolResourceManager::update(const NodeHealthView& node) {
  std::vector<PluginDevice> devices;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    node_ = node;
    devices = poolDevices(pool_, node_);
  }
  return store_.publish(std::move(devices));
}

Result<std::vector<std::string>>
PoolResourceManager::preferredAllocation(const std::vector<std::string>& available,
                                         const std::vector<std::string>& must_include,
                                         int32_t size) const {
  std::vector<PlacedDevice> placed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& hca : pool_.hcas()) {
      const RdmaDevice* d = node_.topology ? node_.topology->findDevice(hca) : nullptr;
      if (d) {
        placed.push_back({exclusiveId(*d), d->numa_node, d->pcie_path});
      }
    }
    if (!pool_.exclusive) {
      placed.clear();
      for (uint32_t i = 0; i < pool_.shared_count; ++i) {
        placed.push_back({std::to_string(i), std::nullopt, {}});
      }
    }
  }
  return choosePreferredAllocation(placed, available, must_include, size);
}

Result<ContainerAllocation> PoolResourceManager::allocate(const std::vector<std::string>& ids) {
  std::vector<std::string> granted;
  std::shared_ptr<const NodeTopology> topology;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    topology = node_.topology;
    const auto devices = poolDevices(pool_, node_);
    std::vector<std::string> unknown;
    std::vector<std::string> unhealthy;
    for (const auto& id : ids) {
      auto it = std::find_if(devices.begin(), devices.end(),
                             [&](const PluginDevice& d) { return d.id == id; });
      if (it == devices.end()) {
        unknown.push_back(id);
      } else if (!it->healthy) {
        unhealthy.push_back(id);
      }
    }
    if (ids.empty() || !unknown.empty() || !unhealthy.empty()) {
      std::string message = "cannot allocate " + pool_.resource_name + ":";
      if (ids.empty()) {
        message += " no device IDs requested";
      }
      if (!unknown.empty()) {
        message += " unknown device IDs [" + joinIds(unknown) + "]";
      }
      if (!unhealthy.empty()) {
        message += " unhealthy device IDs [" + joinIds(unhealthy) + "]";
      }
      store_.forceResend(); // the kubelet's view is stale: send it the list again
      return makeError(message);
    }
    for (const auto& hca : pool_.hcas()) {
      if (!hcaUsable(pool_, node_, hca)) {
        continue;
      }
      const RdmaDevice* d = topology->findDevice(hca);
      if (!pool_.exclusive || std::find(ids.begin(), ids.end(), exclusiveId(*d)) != ids.end()) {
        granted.push_back(hca);
      }
    }
  }
  auto env = nccl_env_(*topology, granted);
  if (!env) {
    return makeError("cannot compute NCCL settings for " + joinIds(granted) + ": " +
                     env.error().message);
  }
  std::string conf_path;
  if (pool_.mount_nccl_conf) {
    auto text = renderNcclConf(*env);
    if (!text) {
      return text.error();
    }
    auto written = state_.writeNcclConf(*text);
    if (!written) {
      return written.error();
    }
    conf_path = *written;
  }
  return buildAllocation(pool_, *topology, granted, *env, conf_path);
}

} // namespace kube_rdma
