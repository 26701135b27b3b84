#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/device_model.h"
#include "common/nccl_settings.h"
#include "common/plugin_config.h"
#include "common/result.h"

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

// Whether `selector` takes `port` of `device` (management and VF rules included).
bool selectorMatches(const PoolSelector& selector, const RdmaDevice& device, const Port& port,
                     bool is_management);

// One NodePool per configured pool, in config order, possibly without HCAs. Each port goes to the
// first pool whose selector takes it, whatever its state (health decides usability later).
std::vector<NodePool> buildPools(const NodeTopology& topology, const PluginConfig& config);

// NCCL_SOCKET_IFNAME for a container that may run on the host's network or on the pod network
// (the plugin cannot tell which): the node's management netdev and the CNI's eth0, exact names,
// so NCCL finds an interface either way and never a data netdev: "=bond0,eth0", or "=eth0".
std::string socketIfnameFor(const std::string& management_netdev);

// The environment for a container granted `granted_devices` of `pool`, in this order:
// NCCL_IB_HCA (=dev:port of the pool's ACTIVE ports on the granted HCAs), NCCL_IB_DISABLE=0,
// NCCL_IB_GID_INDEX (fixed; or "agreed" when every selected RoCE port picks the same GID; else
// left out), NCCL_SOCKET_IFNAME (socketIfnameFor; left out when the node has no default route),
// KUBE_RDMA_DEVICES, KUBE_RDMA_NETDEVS (comma lists), then the pool's extra env, which may
// replace NCCL_SOCKET_IFNAME.
// `topology` gives the current port states and GID tables. Errors: a granted device that is not
// in the pool, or no ACTIVE pool port on the granted devices (an NCCL_IB_HCA that selects
// nothing would let NCCL fall back to sockets silently).
Result<NcclEnv> computeNcclSettings(const NodeTopology& topology, const NodePool& pool,
                                    const std::vector<std::string>& granted_devices);

} // namespace kube_rdma
