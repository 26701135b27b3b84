#include "plugin/pool_resource_manager.h"

#include <algorithm>

#include "common/util/strings.h"
#include "plugin/preferred_allocation.h"

namespace kube_rdma {
namespace {

constexpr const char* kRdmaCm = "/dev/infiniband/rdma_cm";

// An HCA of the pool is usable when it is in the topology, has a uverbs node under --dev-root
// and at least one of the pool's ports on it is ACTIVE.
bool hcaUsable(const NodePool& pool, const NodeHealthView& node, const std::string& hca) {
  const RdmaDevice* device = node.topology ? node.topology->findDevice(hca) : nullptr;
  if (!device || device->uverbs.empty() || !node.uverbs_present.count(device->uverbs)) {
    return false;
  }
  for (const auto& pool_hca : pool.hcas) {
    if (pool_hca.device != hca) {
      continue;
    }
    for (const auto& port : device->ports) {
      const bool in_pool = std::find(pool_hca.ports.begin(), pool_hca.ports.end(), port.number) !=
                           pool_hca.ports.end();
      if (in_pool && port.active()) {
        return true;
      }
    }
  }
  return false;
}

} // namespace

std::string cdiKind(const std::string& resource_name) {
  std::string kind = resource_name;
  std::ranges::replace_if(
      kind, [](char c) { return c == '/' || c == '.'; }, '_');
  return "kube-rdma.io/" + kind;
}

std::vector<PluginDevice> poolDevices(const NodePool& pool, const NodeHealthView& node) {
  std::vector<PluginDevice> out;
  const auto hcas = pool.deviceNames();
  if (pool.spec.mode == PoolMode::kShared) {
    const bool any = std::any_of(hcas.begin(), hcas.end(),
                                 [&](const auto& h) { return hcaUsable(pool, node, h); });
    const uint32_t count = sharedDeviceCount(pool.spec, hcas.size());
    for (uint32_t i = 0; i < count; ++i) {
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

ContainerAllocation buildAllocation(const NodePool& pool, const NodeTopology& topology,
                                    const std::vector<std::string>& granted, const NcclEnv& env,
                                    const std::string& nccl_conf_host_path, bool cdi) {
  ContainerAllocation out;
  for (const auto& hca : granted) {
    const RdmaDevice* device = topology.findDevice(hca);
    if (device && !device->uverbs.empty()) {
      const std::string path = device->uverbsDevicePath();
      out.devices.push_back({path, path, "rw"});
    }
    if (cdi) {
      out.cdi_devices.push_back(cdiKind(pool.spec.resource_name) + "=" + hca);
    }
  }
  out.devices.push_back({kRdmaCm, kRdmaCm, "rw"});
  out.envs = env;
  if (pool.spec.nccl.nccl_conf_enabled && !nccl_conf_host_path.empty()) {
    out.mounts.push_back({pool.spec.nccl.nccl_conf_path, nccl_conf_host_path, true});
  }
  return out;
}

std::string exclusiveId(const RdmaDevice& device) {
  return device.pci_address.empty() ? device.name : device.pci_address;
}

bool PoolResourceManager::update(const NodeHealthView& node) {
  std::vector<PluginDevice> devices;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    node_ = node;
    devices_ = poolDevices(pool_, node_);
    usable_.clear();
    for (const auto& hca : pool_.deviceNames()) {
      if (hcaUsable(pool_, node_, hca)) {
        usable_.emplace_back(hca, exclusiveId(*node_.topology->findDevice(hca)));
      }
    }
    devices = devices_;
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
    if (pool_.spec.mode == PoolMode::kExclusive) {
      for (const auto& hca : pool_.deviceNames()) {
        const RdmaDevice* d = node_.topology ? node_.topology->findDevice(hca) : nullptr;
        if (d) {
          placed.push_back({exclusiveId(*d), d->numa_node, d->pcie_path});
        }
      }
    } else {
      for (const auto& d : devices_) {
        placed.push_back({d.id, std::nullopt, {}}); // shared IDs are interchangeable
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
    std::vector<std::string> unknown;
    std::vector<std::string> unhealthy;
    for (const auto& id : ids) {
      auto it = std::find_if(devices_.begin(), devices_.end(),
                             [&](const PluginDevice& d) { return d.id == id; });
      if (it == devices_.end()) {
        unknown.push_back(id);
      } else if (!it->healthy) {
        unhealthy.push_back(id);
      }
    }
    if (ids.empty() || !unknown.empty() || !unhealthy.empty()) {
      std::string message = "cannot allocate " + pool_.spec.resource_name + ":";
      if (ids.empty()) {
        message += " no device IDs requested";
      }
      if (!unknown.empty()) {
        message += " unknown device IDs [" + joinStrings(unknown, ", ") + "]";
      }
      if (!unhealthy.empty()) {
        message += " unhealthy device IDs [" + joinStrings(unhealthy, ", ") + "]";
      }
      store_.forceResend(); // the kubelet's view is stale: send it the list again
      return makeError(message);
    }
    for (const auto& [hca, id] : usable_) {
      if (pool_.spec.mode == PoolMode::kShared ||
          std::find(ids.begin(), ids.end(), id) != ids.end()) {
        granted.push_back(hca);
      }
    }
  }
  auto env = computeNcclSettings(*topology, pool_, granted);
  if (!env) {
    return makeError("cannot compute NCCL settings for " + joinStrings(granted, ", ") + ": " +
                     env.error().message);
  }
  std::string conf_path;
  if (pool_.spec.nccl.nccl_conf_enabled) {
    auto text = renderNcclConf(*env);
    if (!text) {
      return text.error();
    }
    // Named after its content: one stat when it exists, written again when it went missing.
    auto written = state_.writeNcclConf(*text);
    if (!written) {
      return written.error();
    }
    conf_path = std::move(*written);
  }
  if (gid_per_container_) {
    std::erase_if(*env, [](const auto& setting) { return setting.first == "NCCL_IB_GID_INDEX"; });
  }
  return buildAllocation(pool_, *topology, granted, *env, conf_path, cdi_);
}

} // namespace kube_rdma
