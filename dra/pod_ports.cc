#include "dra/pod_ports.h"

#include "dra/resource_slice.h"

namespace kube_rdma {

DraPortNames draPortNames(const NodeTopology& topology, const std::vector<NodePool>& pools) {
  DraPortNames names;
  for (const auto& published : publishedPorts(topology, pools)) {
    names[published.name] = {published.device->name, published.port->number};
  }
  return names;
}

ScrapedFamily claimPortFamily(const std::vector<ContainerHoldings>& held, const DraPortNames& ports,
                              const std::string& node_name) {
  ScrapedFamily family = podPortInfoFamily();
  for (const auto& container : held) {
    for (const auto& device : container.claim_devices) {
      if (device.driver != kDraDriverName || device.pool != node_name) {
        continue;
      }
      if (const auto port = ports.find(device.device); port != ports.end()) {
        family.samples.push_back(
            {podPortLabels(container, {"claim", device.claim_name}, port->second), 1});
      }
    }
  }
  return family;
}

} // namespace kube_rdma
