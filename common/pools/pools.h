#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/node/device_model.h"
#include "common/pools/nccl_settings.h"
#include "common/pools/plugin_config.h"
#include "common/util/result.h"

// Pure pool logic: which HCAs and ports each configured pool takes on a node, and the NCCL
// settings for the HCAs a container was granted (DESIGN.md "NCCL settings: who sets what").
namespace kube_rdma {

// One HCA of a pool and the ports of it that belong to the pool (a dual-port HCA can have a port
// in each pool).
struct PoolHca {
  std::string device;
  std::vector<uint32_t> ports;
  bool operator==(const PoolHca&) const = default;
};

// A configured pool as it falls on this node.
struct NodePool {
  PoolSpec spec;
  std::vector<PoolHca> hcas; // in the topology's device order

  std::vector<std::string> deviceNames() const;
  std::vector<HcaPort> ports() const; // every (device, port), in order
  bool operator==(const NodePool&) const = default;
};

// The RDMA device whose netdevs include topology.management_netdev (the default route's
// interface); empty when there is none.
std::string managementDevice(const NodeTopology& topology);

// The selector rules, in the order a selector tests them, plus the pool order itself.
enum class PoolRule {
  kManagement,   // the HCA carrying the default route, without includeManagement
  kVf,           // an SR-IOV VF, without includeVFs
  kLinkLayer,    // linkLayer
  kDeviceNames,  // deviceNames
  kNetdevNames,  // netdevNames
  kVendors,      // vendors
  kDeviceIds,    // deviceIDs
  kDrivers,      // drivers
  kPciAddresses, // pciAddresses
  kExclude,      // exclude
  kEarlierPool,  // the selector takes it, but an earlier pool took it first
};
// What an operator reads: "management HCA", "SR-IOV VF", then the config keys ("linkLayer",
// "deviceNames", ...) and "taken by an earlier pool".
std::string toString(PoolRule rule);

// The first rule of `selector` that leaves `port` of `device` out; nullopt when it takes the port.
std::optional<PoolRule> selectorRejection(const PoolSelector& selector, const RdmaDevice& device,
                                          const Port& port, bool is_management);

// One NodePool per configured pool, in config order, possibly without HCAs. Each port goes to the
// first pool whose selector takes it, whatever its state (health decides usability later).
std::vector<NodePool> buildPools(const NodeTopology& topology, const PluginConfig& config);

// A port a pool does not have, and why.
struct LeftOutPort {
  HcaPort port;
  PoolRule rule = PoolRule::kManagement;
  std::string taken_by; // kEarlierPool: that pool's resource name
  bool operator==(const LeftOutPort&) const = default;
};

// A pool as buildPools makes it, with every port of the node it left out.
struct PoolExplanation {
  NodePool pool;
  std::vector<LeftOutPort> left_out; // in the topology's port order
  bool operator==(const PoolExplanation&) const = default;
};

// buildPools, and for each pool the rule that left each other port out ("why is my pool
// empty?"). Same matching and the same first-pool-wins order as buildPools.
std::vector<PoolExplanation> explainPools(const NodeTopology& topology, const PluginConfig& config);

// The environment for a container granted `granted_devices` of `pool`, in this order:
// NCCL_IB_HCA (=dev:port of the pool's ACTIVE ports on the granted HCAs), NCCL_IB_DISABLE=0,
// NCCL_IB_GID_INDEX (fixed; or "agreed" when every selected RoCE port's own GID, one holding an
// address of topology.addresses' namespace, has the same index; else left out), NCCL_SOCKET_IFNAME
// (the management netdev and eth0; left out when the node has no default route), KUBE_RDMA_DEVICES,
// KUBE_RDMA_NETDEVS (comma lists), then the pool's extra env, which may replace NCCL_SOCKET_IFNAME.
// `topology` gives the current port states and GID tables. Errors: a granted device that is not
// in the pool, or no ACTIVE pool port on the granted devices (an NCCL_IB_HCA that selects
// nothing would let NCCL fall back to sockets silently).
Result<NcclEnv> computeNcclSettings(const NodeTopology& topology, const NodePool& pool,
                                    const std::vector<std::string>& granted_devices);

} // namespace kube_rdma
