#include "plugin/topology_json.h"

#include <nlohmann/json.hpp>

namespace kube_rdma {
namespace {

nlohmann::json numaJson(const std::optional<int>& numa) {
  return numa ? nlohmann::json(*numa) : nlohmann::json(nullptr);
}

} // namespace

std::string topologyToJson(const NodeTopology& topology) {
  nlohmann::ordered_json root;
  root["source"] = topology.source;
  root["managementNetdev"] = topology.management_netdev;
  root["devices"] = nlohmann::ordered_json::array();
  for (const auto& d : topology.devices) {
    nlohmann::ordered_json device = {{"name", d.name},
                                     {"pciAddress", d.pci_address},
                                     {"vendor", d.vendor_id},
                                     {"device", d.device_id},
                                     {"driver", d.driver},
                                     {"numaNode", numaJson(d.numa_node)},
                                     {"uverbs", d.uverbsDevicePath()},
                                     {"netdevs", d.netdevs},
                                     {"isVF", d.is_vf},
                                     {"pciePath", d.pcie_path}};
    device["ports"] = nlohmann::ordered_json::array();
    for (const auto& p : d.ports) {
      nlohmann::ordered_json port = {{"number", p.number},
                                     {"state", toString(p.state)},
                                     {"linkLayer", toString(p.link_layer)},
                                     {"rate", p.rate},
                                     {"netdev", p.netdev}};
      port["gids"] = nlohmann::ordered_json::array();
      for (const auto& g : p.gids) {
        port["gids"].push_back({{"index", g.index},
                                {"gid", g.gid},
                                {"version", toString(g.type)},
                                {"netdev", g.netdev},
                                {"ipv4", g.ipv4}});
      }
      device["ports"].push_back(std::move(port));
    }
    root["devices"].push_back(std::move(device));
  }
  root["gpus"] = nlohmann::ordered_json::array();
  for (const auto& g : topology.gpus) {
    root["gpus"].push_back({{"pciAddress", g.pci_address},
                            {"device", g.device_id},
                            {"numaNode", numaJson(g.numa_node)},
                            {"pciePath", g.pcie_path}});
  }
  return root.dump(2) + "\n";
}

} // namespace kube_rdma
