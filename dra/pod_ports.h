#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/metrics.h"
#include "common/nccl_settings.h"
#include "common/pools.h"
#include "rpc/pod_resources_client.h"

namespace kube_rdma {

// Every port the driver publishes, by its DRA device name ("pci-0000-13-00-0-p1").
using DraPortNames = std::map<std::string, HcaPort>;
DraPortNames draPortNames(const NodeTopology& topology, const std::vector<NodePool>& pools);

// kube_rdma_pod_port_info{namespace, pod, container, claim, device, port} 1: each running
// container's ports among the devices of its claims that this driver allocated on this node (the
// pool named after `node_name`), by the kubelet's PodResources API.
ScrapedFamily claimPortFamily(const std::vector<ContainerHoldings>& held, const DraPortNames& ports,
                              const std::string& node_name);

} // namespace kube_rdma
