#include "common/labels/nfd_features.h"

#include <set>

#include "common/util/log.h"

namespace kube_rdma {

NodeLabels nodeLabels(const NodeTopology& topology, const std::vector<NodePool>& pools,
                      bool gpudirect_ready) {
  NodeLabels labels;
  size_t ports = 0;
  size_t active = 0;
  std::set<LinkLayer> link_layers;
  std::set<uint32_t> active_rates;
  for (const auto& pool : pools) {
    for (const auto& [device_name, number] : pool.ports()) {
      const RdmaDevice* device = topology.findDevice(device_name);
      if (!device) {
        continue; // vanished since the pools were built; rediscovery rebuilds them
      }
      for (const auto& port : device->ports) {
        if (port.number != number) {
          continue;
        }
        ++ports;
        link_layers.insert(port.link_layer);
        if (port.active()) {
          ++active;
          active_rates.insert(port.rate_gbps);
        }
      }
    }
  }
  if (ports == 0) {
    return labels;
  }
  const std::string ns = "kube-rdma.io/";
  labels[ns + "rdma"] = "true";
  if (link_layers.count(LinkLayer::kInfiniBand)) {
    labels[ns + "infiniband"] = "true";
  }
  if (link_layers.count(LinkLayer::kEthernet)) {
    labels[ns + "roce"] = "true";
  }
  labels[ns + "data-ports"] = std::to_string(ports);
  labels[ns + "data-ports-active"] = std::to_string(active);
  if (!active_rates.empty()) {
    labels[ns + "port-rate-gbps"] =
        active_rates.size() == 1 ? std::to_string(*active_rates.begin()) : "mixed";
  }
  if (gpudirect_ready && !topology.gpus.empty()) {
    labels[ns + "gpudirect-rdma"] = "true";
  }
  return labels;
}

std::string nfdFeatureFile(const NodeLabels& labels, std::chrono::system_clock::time_point expiry) {
  std::string out = "# kube-rdma node labels, rewritten by their daemon before they expire\n";
  out += "# +expiry-time=" + rfc3339Utc(expiry) + "\n";
  for (const auto& [name, value] : labels) {
    out += name + "=" + value + "\n";
  }
  return out;
}

} // namespace kube_rdma
