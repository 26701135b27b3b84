#include "common/container_nccl.h"

#include <algorithm>
#include <string>

namespace kube_rdma {

namespace {

const std::string* ibHcaOf(const NcclEnv& node_conf) {
  const auto hca = std::find_if(node_conf.begin(), node_conf.end(),
                                [](const auto& setting) { return setting.first == "NCCL_IB_HCA"; });
  return hca == node_conf.end() ? nullptr : &hca->second;
}

} // namespace

std::vector<std::pair<std::string, uint32_t>> hcaPortsOf(const NcclEnv& node_conf) {
  std::vector<std::pair<std::string, uint32_t>> ports;
  if (const std::string* hca = ibHcaOf(node_conf)) {
    for (const auto& entry : parseNcclIbHca(*hca).entries) {
      if (entry.port >= 0) {
        ports.emplace_back(entry.name, static_cast<uint32_t>(entry.port));
      }
    }
  }
  return ports;
}

Result<ContainerNcclConf> resolveContainerNcclConf(const NcclEnv& node_conf,
                                                   const NodeTopology& topology,
                                                   const GidSelectionPolicy& policy) {
  const std::string* hca = ibHcaOf(node_conf);
  if (hca == nullptr) {
    return makeError("the node's nccl.conf has no NCCL_IB_HCA");
  }
  ContainerNcclConf out;
  std::vector<const Port*> ports;
  for (const auto& entry : parseNcclIbHca(*hca).entries) {
    const RdmaDevice* device = topology.findDevice(entry.name);
    const Port* port = nullptr;
    if (device != nullptr) {
      const auto it = std::find_if(device->ports.begin(), device->ports.end(), [&](const Port& p) {
        return static_cast<int>(p.number) == entry.port;
      });
      port = it == device->ports.end() ? nullptr : &*it;
    }
    if (entry.port < 0) {
      return makeError("NCCL_IB_HCA entry " + entry.name + " names no port");
    }
    if (port == nullptr) {
      return makeError("NCCL_IB_HCA entry " + entry.name + ":" + std::to_string(entry.port) +
                       (device == nullptr ? ": no such RDMA device" : ": no such port"));
    }
    out.ports.push_back({entry.name, static_cast<uint32_t>(entry.port)});
    ports.push_back(port);
  }
  out.choice = chooseGidIndex(ports, policy, topology.addresses);
  out.settings = node_conf;
  if (!out.choice.index) {
    return out;
  }
  out.own_gid_index = true;
  const std::string index = std::to_string(*out.choice.index);
  if (auto gid = std::find_if(out.settings.begin(), out.settings.end(),
                              [](const auto& s) { return s.first == "NCCL_IB_GID_INDEX"; });
      gid != out.settings.end()) {
    gid->second = index;
    return out;
  }
  auto after = std::find_if(out.settings.begin(), out.settings.end(),
                            [](const auto& s) { return s.first == "NCCL_IB_DISABLE"; });
  after = after == out.settings.end()
              ? std::find_if(out.settings.begin(), out.settings.end(),
                             [](const auto& s) { return s.first == "NCCL_IB_HCA"; })
              : after;
  out.settings.insert(after + 1, {"NCCL_IB_GID_INDEX", index});
  return out;
}

} // namespace kube_rdma
