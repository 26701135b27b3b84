#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "common/node/device_model.h"
#include "common/pools/pools.h"

// Node labels for Node Feature Discovery's local source (docs/node-labels.md): what an operator
// selects RDMA nodes by, written as an NFD feature file.
namespace kube_rdma {

// Label name ("kube-rdma.io/rdma") -> value ("true"), sorted by name.
using NodeLabels = std::map<std::string, std::string>;

// The labels of a node whose pools take at least one port (none at all otherwise: NFD removes
// the labels a feature file no longer has), all in the kube-rdma.io namespace:
//   rdma=true                    the pools take at least one port
//   infiniband=true, roce=true   one per link layer among those ports
//   data-ports=N                 the ports the pools take
//   data-ports-active=N          of which ACTIVE
//   port-rate-gbps=R or "mixed"  the rate of the ACTIVE ones, "mixed" when they differ (left out
//                                when none is ACTIVE)
//   gpudirect-rdma=true          GPUs present and `gpudirect_ready` (gpuDirectReady, in
//                                node_snapshot.h: the doctor's GPUDirect check passes)
// `topology` carries the port states to use (the health view's).
NodeLabels nodeLabels(const NodeTopology& topology, const std::vector<NodePool>& pools,
                      bool gpudirect_ready);

// An NFD feature file (local source, format of NFD v0.14 and later): a comment, the
// "# +expiry-time=" directive (RFC 3339, UTC; it applies to the lines after it), then one
// "name=value" line per label.
std::string nfdFeatureFile(const NodeLabels& labels, std::chrono::system_clock::time_point expiry);

} // namespace kube_rdma
