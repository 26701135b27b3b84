#pragma once

#include <vector>

#include "common/node/device_model.h"
#include "common/util/metrics.h"
#include "common/pools/pools.h"
#include "rpc/pod_resources_client.h"

namespace kube_rdma {

// The ports of `pools` the kubelet's device IDs give `container`: a shared pool's ID stands for
// every port of the pool (any one grants them all), an exclusive pool's for the ports of its HCA.
std::vector<HcaPort> portsHeld(const ContainerHoldings& container,
                               const std::vector<NodePool>& pools, const NodeTopology& topology);

// kube_rdma_pod_port_info{namespace, pod, container, resource, device, port} 1: each running
// container's RDMA ports among `pools` (portsHeld). Joined on device and port with the per-port
// counters, it gives each pod's traffic (docs/plugin.md "Per-pod metrics").
ScrapedFamily podPortFamily(const std::vector<ContainerHoldings>& held,
                            const std::vector<NodePool>& pools, const NodeTopology& topology);

} // namespace kube_rdma
