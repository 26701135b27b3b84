#include "dra/resource_slice.h"

#include <algorithm>
#include <cctype>

#include "common/node/gid_selection.h"
#include "common/node/topology.h"

namespace kube_rdma {
namespace {

using Json = nlohmann::ordered_json;

// Lower case, every run of other characters one '-', no '-' at either end, at most 63.
std::string dnsLabel(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') {
    out.pop_back();
  }
  return out.substr(0, 63);
}

// Builds one device's attributes, leaving out what the API would refuse.
class AttributeSet {
public:
  AttributeSet(const std::string& device, std::vector<std::string>& warnings)
      : device_(device), warnings_(warnings) {}

  void addString(const std::string& id, const std::string& value) {
    if (value.empty()) {
      return;
    }
    if (value.size() > kMaxAttributeStringLength) {
      warnings_.push_back(device_ + ": attribute " + id + " left out: \"" + value + "\" is over " +
                          std::to_string(kMaxAttributeStringLength) + " characters");
      return;
    }
    attributes_[id] = {{"string", value}};
  }
  void addInt(const std::string& id, int64_t value) { attributes_[id] = {{"int", value}}; }

  Json take() { return std::move(attributes_); }

private:
  const std::string& device_;
  std::vector<std::string>& warnings_;
  Json attributes_ = Json::object();
};

// The IPv4 address of the GID NCCL's rule picks, else of the first IPv4 GID of the host's.
std::string portIpv4(const Port& port, std::optional<uint32_t> gid_index,
                     const NamespaceAddresses& host_addresses) {
  for (const auto& gid : port.gids) {
    if (gid_index && gid.index == *gid_index && !gid.ipv4.empty()) {
      return gid.ipv4;
    }
  }
  for (const auto& gid : port.gids) {
    if (!gid.ipv4.empty() && gidInNamespace(gid, host_addresses)) {
      return gid.ipv4;
    }
  }
  return "";
}

// The shared pool's tenants, as the consumable capacity of each of its ports.
Json tenantsCapacity(const NodePool& pool) {
  const std::string tenants =
      std::to_string(std::max<uint32_t>(1, sharedDeviceCount(pool.spec, pool.hcas.size())));
  return {{kTenantsCapacity,
           {{"value", tenants},
            {"requestPolicy", {{"default", "1"}, {"validRange", {{"min", "1"}}}}}}}};
}

Json deviceJson(const DraPort& p, const NamespaceAddresses& host_addresses,
                const SliceOptions& options, std::vector<std::string>& warnings) {
  const RdmaDevice& d = *p.device;
  const Port& port = *p.port;
  AttributeSet a(p.name, warnings);
  a.addString("rdmaDevice", d.name);
  a.addInt("port", port.number);
  a.addString("netdev", port.netdev);
  a.addString("linkLayer", toString(port.link_layer));
  a.addString("state", toString(port.state));
  a.addInt("rateGbps", port.rate_gbps);
  // The host's own GID: a pod's macvlan address on this port is not the port's.
  const std::optional<uint32_t> gid_index =
      selectOwnGidIndex(port, p.pool->spec.nccl.gid_policy, host_addresses);
  a.addString("ipv4", portIpv4(port, gid_index, host_addresses));
  if (gid_index) {
    a.addInt("gidIndex", *gid_index);
  }
  if (d.numa_node) {
    a.addInt("numaNode", *d.numa_node);
  }
  a.addString("firmware", d.fw_ver);
  a.addString("hcaType", d.hca_type);
  a.addString("pciVendorID", d.vendor_id);
  a.addString("pciDeviceID", d.device_id);
  a.addString("resource.kubernetes.io/pciBusID", d.pci_address);
  a.addString("resource.kubernetes.io/pcieRoot", rootComplexOf(d.pcie_path));
  Json device = {{"name", p.name}, {"attributes", a.take()}};
  if (options.share_ports && p.pool->spec.mode == PoolMode::kShared) {
    device["allowMultipleAllocations"] = true;
    device["capacity"] = tenantsCapacity(*p.pool);
  }
  if (const std::optional<PortProblem> problem = portProblem(d, port)) {
    // No timeAdded: the API server stamps it when the taint first appears.
    device["taints"] = Json::array(
        {{{"key", kUnhealthyTaintKey}, {"value", problem->reason}, {"effect", "NoSchedule"}}});
  }
  return device;
}

} // namespace

std::optional<PortProblem> portProblem(const RdmaDevice& device, const Port& port) {
  if (!port.active()) {
    return PortProblem{toString(port.state), device.name + " port " + std::to_string(port.number) +
                                                 " is " + toString(port.state)};
  }
  if (device.uverbs.empty()) {
    return PortProblem{"NoUverbsDevice", device.name + " has no uverbs device node"};
  }
  return std::nullopt;
}

std::string draDeviceName(const RdmaDevice& device, uint32_t port) {
  const std::string suffix = "-p" + std::to_string(port);
  const std::string base = device.pci_address.empty() ? "rdma-" + dnsLabel(device.name)
                                                      : "pci-" + dnsLabel(device.pci_address);
  return dnsLabel(base.substr(0, 63 - suffix.size())) + suffix;
}

std::vector<DraPort> publishedPorts(const NodeTopology& topology,
                                    const std::vector<NodePool>& pools) {
  std::vector<DraPort> out;
  for (const auto& device : topology.devices) {
    for (const auto& port : device.ports) {
      for (const auto& pool : pools) {
        const auto hca = std::find_if(pool.hcas.begin(), pool.hcas.end(),
                                      [&](const PoolHca& h) { return h.device == device.name; });
        if (hca != pool.hcas.end() &&
            std::find(hca->ports.begin(), hca->ports.end(), port.number) != hca->ports.end()) {
          out.push_back(DraPort{draDeviceName(device, port.number), &device, &port, &pool});
          break;
        }
      }
    }
  }
  return out;
}

SliceSet resourceSlicesFor(const NodeTopology& topology, const PluginConfig& config,
                           const SliceOwner& owner, int64_t generation,
                           const SliceOptions& options) {
  const std::vector<NodePool> pools = buildPools(topology, config);
  const std::vector<DraPort> ports = publishedPorts(topology, pools);
  SliceSet set;
  const size_t count =
      std::max<size_t>(1, (ports.size() + kMaxDevicesPerSlice - 1) / kMaxDevicesPerSlice);
  for (size_t s = 0; s < count; ++s) {
    Json devices = Json::array();
    for (size_t i = s * kMaxDevicesPerSlice;
         i < std::min(ports.size(), (s + 1) * kMaxDevicesPerSlice); ++i) {
      devices.push_back(deviceJson(ports[i], topology.addresses, options, set.warnings));
    }
    Json slice = {{"apiVersion", "resource.k8s.io/v1"},
                  {"kind", "ResourceSlice"},
                  {"metadata",
                   {{"generateName", owner.node_name + "-" + kDraDriverName + "-"},
                    {"ownerReferences", Json::array({{{"apiVersion", "v1"},
                                                      {"kind", "Node"},
                                                      {"name", owner.node_name},
                                                      {"uid", owner.node_uid},
                                                      {"controller", true}}})}}},
                  {"spec",
                   {{"driver", kDraDriverName},
                    {"nodeName", owner.node_name},
                    {"pool",
                     {{"name", owner.node_name},
                      {"generation", generation},
                      {"resourceSliceCount", static_cast<int64_t>(count)}}},
                    {"devices", std::move(devices)}}}};
    set.slices.push_back(std::move(slice));
  }
  return set;
}

} // namespace kube_rdma
