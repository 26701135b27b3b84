#include "plugin/pod_ports.h"

#include <algorithm>
#include <string>

#include "plugin/pool_resource_manager.h"

namespace kube_rdma {
namespace {

std::vector<HcaPort> portsOf(const NodePool& pool, const NodeTopology& topology,
                             const std::vector<std::string>& ids) {
  std::vector<HcaPort> ports;
  for (const auto& hca : pool.hcas) {
    const RdmaDevice* device = topology.findDevice(hca.device);
    const bool granted = pool.spec.mode == PoolMode::kShared ||
                         (device && std::ranges::find(ids, exclusiveId(*device)) != ids.end());
    if (granted) {
      for (const uint32_t port : hca.ports) {
        ports.push_back({hca.device, port});
      }
    }
  }
  return ports;
}

} // namespace

ScrapedFamily podPortFamily(const std::vector<ContainerHoldings>& held,
                            const std::vector<NodePool>& pools, const NodeTopology& topology) {
  ScrapedFamily family = podPortInfoFamily();
  for (const auto& container : held) {
    for (const auto& pool : pools) {
      const auto ids = container.device_ids.find(pool.spec.resource_name);
      if (ids == container.device_ids.end()) {
        continue;
      }
      for (const auto& port : portsOf(pool, topology, ids->second)) {
        family.samples.push_back(
            {podPortLabels(container, {"resource", pool.spec.resource_name}, port), 1});
      }
    }
  }
  return family;
}

} // namespace kube_rdma
