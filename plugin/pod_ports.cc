#include "plugin/pod_ports.h"

#include <algorithm>
#include <string>

#include "plugin/pool_resource_manager.h"

namespace kube_rdma {
namespace {

std::vector<HcaPort> portsOfPool(const NodePool& pool, const NodeTopology& topology,
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

// Calls visit(pool, port) for each port of `pools` that `container` holds.
template <typename Visit>
void forEachPortHeld(const ContainerHoldings& container, const std::vector<NodePool>& pools,
                     const NodeTopology& topology, Visit visit) {
  for (const auto& pool : pools) {
    const auto ids = container.device_ids.find(pool.spec.resource_name);
    if (ids == container.device_ids.end()) {
      continue;
    }
    for (const auto& port : portsOfPool(pool, topology, ids->second)) {
      visit(pool, port);
    }
  }
}

} // namespace

std::vector<HcaPort> portsHeld(const ContainerHoldings& container,
                               const std::vector<NodePool>& pools, const NodeTopology& topology) {
  std::vector<HcaPort> ports;
  forEachPortHeld(container, pools, topology,
                  [&](const NodePool&, const HcaPort& port) { ports.push_back(port); });
  return ports;
}

ScrapedFamily podPortFamily(const std::vector<ContainerHoldings>& held,
                            const std::vector<NodePool>& pools, const NodeTopology& topology) {
  ScrapedFamily family = podPortInfoFamily();
  for (const auto& container : held) {
    forEachPortHeld(container, pools, topology, [&](const NodePool& pool, const HcaPort& port) {
      family.samples.push_back(
          {podPortLabels(container, {"resource", pool.spec.resource_name}, port), 1});
    });
  }
  return family;
}

} // namespace kube_rdma
