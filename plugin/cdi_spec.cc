#include "plugin/cdi_spec.h"

#include <nlohmann/json.hpp>

#include "common/cdi_edits.h"
#include "plugin/pool_resource_manager.h"

namespace kube_rdma {

std::string cdiSpecJson(const NodePool& pool, const NodeTopology& topology,
                        const MemlockHookConfig& memlock) {
  std::vector<CdiDevice> devices;
  for (const auto& name : pool.deviceNames()) {
    const RdmaDevice* device = topology.findDevice(name);
    if (device != nullptr && !device->uverbs.empty()) {
      devices.push_back({name, device->uverbsDevicePath()});
    }
  }
  return cdiSpec(cdiKind(pool.spec.resource_name), devices, {}, {}, memlock).dump(2) + "\n";
}

std::string cdiSpecPath(const std::string& cdi_dir, const std::string& resource_name) {
  return cdiSpecFile(cdi_dir, cdiKind(resource_name));
}

} // namespace kube_rdma
