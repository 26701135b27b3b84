#pragma once

#include <string>

#include "common/node/device_model.h"

namespace kube_rdma {

// The node's topology as the plugin saw it, for --state-dir/topology.json: devices with their
// PCI placement, NUMA node, uverbs node and ports (state, link layer, netdev, used GIDs), GPUs,
// and the management netdev. For operators and node agents; not read back by the plugin.
std::string topologyToJson(const NodeTopology& topology);

} // namespace kube_rdma
