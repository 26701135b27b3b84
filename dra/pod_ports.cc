#include "dra/pod_ports.h"

#include <iterator>

#include "dra/resource_slice.h"
#include "usage/port_counters.h"

namespace kube_rdma {
namespace {

// Calls visit(claim device, port) for each published port of `container`'s claims.
template <typename Visit>
void forEachClaimPort(const ContainerHoldings& container, const DraPortNames& ports,
                      const std::string& node_name, Visit visit) {
  for (const auto& device : container.claim_devices) {
    if (device.driver != kDraDriverName || device.pool != node_name) {
      continue;
    }
    if (const auto port = ports.find(device.device); port != ports.end()) {
      visit(device, port->second);
    }
  }
}

} // namespace

DraPortNames draPortNames(const NodeTopology& topology, const std::vector<NodePool>& pools) {
  DraPortNames names;
  for (const auto& published : publishedPorts(topology, pools)) {
    names[published.name] = {published.device->name, published.port->number};
  }
  return names;
}

std::vector<HcaPort> claimPortsHeld(const ContainerHoldings& container, const DraPortNames& ports,
                                    const std::string& node_name) {
  std::vector<HcaPort> held;
  forEachClaimPort(container, ports, node_name,
                   [&](const ClaimDeviceHeld&, const HcaPort& port) { held.push_back(port); });
  return held;
}

ScrapedFamily claimPortFamily(const std::vector<ContainerHoldings>& held, const DraPortNames& ports,
                              const std::string& node_name) {
  ScrapedFamily family = podPortInfoFamily();
  for (const auto& container : held) {
    forEachClaimPort(container, ports, node_name,
                     [&](const ClaimDeviceHeld& device, const HcaPort& port) {
                       family.samples.push_back(
                           {podPortLabels(container, {"claim", device.claim_name}, port), 1});
                     });
  }
  return family;
}

void PublishedPortUsage::set(const NodeTopology& topology, const std::vector<NodePool>& pools) {
  auto names = draPortNames(topology, pools);
  auto copy = std::make_shared<const NodeTopology>(topology);
  std::lock_guard<std::mutex> lock(mutex_);
  names_ = std::move(names);
  topology_ = std::move(copy);
}

std::vector<ScrapedFamily>
PublishedPortUsage::scrape(const std::optional<std::vector<ContainerHoldings>>& held) const {
  std::shared_ptr<const NodeTopology> topology;
  std::vector<ScrapedFamily> families;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    topology = topology_;
    if (held) {
      families.push_back(claimPortFamily(*held, names_, node_name_));
    }
  }
  // The kernel keeps the counters: read at each scrape, outside the lock, never stored.
  auto counters = portCounterFamilies(readPortCounters(sysfs_root_, *topology));
  counters.insert(counters.end(), std::make_move_iterator(families.begin()),
                  std::make_move_iterator(families.end()));
  return counters;
}

std::vector<PodPortTraffic>
PublishedPortUsage::traffic(const std::vector<ContainerHoldings>& held) const {
  DraPortNames names;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    names = names_;
  }
  return podPortTraffic(
      held,
      [&](const ContainerHoldings& container) {
        return claimPortsHeld(container, names, node_name_);
      },
      [this](const HcaPort& port) { return readPortDataWords(sysfs_root_, port); });
}

} // namespace kube_rdma
