#include "plugin/cdi_spec.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/pools/cdi_edits.h"
#include "plugin/pool_resource_manager.h"

namespace kube_rdma {

std::string cdiSpecJson(const NodePool& pool, const NodeTopology& topology,
                        const MemlockHookConfig& memlock, const NcclHookConfig& nccl_hook) {
  std::vector<CdiDevice> devices;
  bool roce = false;
  for (const auto& hca : pool.hcas) {
    const RdmaDevice* device = topology.findDevice(hca.device);
    if (device == nullptr) {
      continue;
    }
    if (!device->uverbs.empty()) {
      devices.push_back({hca.device, device->uverbsDevicePath()});
    }
    for (const Port& port : device->ports) {
      roce =
          roce || (port.link_layer == LinkLayer::kEthernet &&
                   std::find(hca.ports.begin(), hca.ports.end(), port.number) != hca.ports.end());
    }
  }
  CdiHooks hooks{memlock, nccl_hook, nullptr};
  if (roce && resolvesGidPerContainer(nccl_hook, pool.spec.nccl)) {
    hooks.per_container = &pool.spec.nccl;
  }
  return cdiSpec(cdiKind(pool.spec.resource_name), devices, {}, {}, hooks).dump(2) + "\n";
}

std::string cdiSpecPath(const std::string& cdi_dir, const std::string& resource_name) {
  return cdiSpecFile(cdi_dir, cdiKind(resource_name));
}

} // namespace kube_rdma
