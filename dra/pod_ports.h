#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/util/metrics.h"
#include "common/pools/nccl_settings.h"
#include "common/pools/pools.h"
#include "rpc/pod_resources_client.h"
#include "usage/unused_rdma.h"

namespace kube_rdma {

// Every port the driver publishes, by its DRA device name ("pci-0000-13-00-0-p1").
using DraPortNames = std::map<std::string, HcaPort>;
DraPortNames draPortNames(const NodeTopology& topology, const std::vector<NodePool>& pools);

// The ports of `container`'s claims that this driver allocated on this node (devices of the pool
// named after `node_name`).
std::vector<HcaPort> claimPortsHeld(const ContainerHoldings& container, const DraPortNames& ports,
                                    const std::string& node_name);

// kube_rdma_pod_port_info{namespace, pod, container, claim, device, port} 1: each running
// container's claimPortsHeld, by the kubelet's PodResources API.
ScrapedFamily claimPortFamily(const std::vector<ContainerHoldings>& held, const DraPortNames& ports,
                              const std::string& node_name);

// The node's published ports as the main loop last discovered them, for the threads that read
// them: the metrics scrape (port counters, who holds which port) and the unused-RDMA watcher.
class PublishedPortUsage {
public:
  PublishedPortUsage(std::string sysfs_root, std::string node_name)
      : sysfs_root_(std::move(sysfs_root)), node_name_(std::move(node_name)) {}

  void set(const NodeTopology& topology, const std::vector<NodePool>& pools);
  // Every counter of every port of the node, and, when the kubelet answered, which container
  // holds which published port.
  std::vector<ScrapedFamily>
  scrape(const std::optional<std::vector<ContainerHoldings>>& held) const;
  // Each pod's traffic on the published ports its claims hold.
  std::vector<PodPortTraffic> traffic(const std::vector<ContainerHoldings>& held) const;

private:
  const std::string sysfs_root_;
  const std::string node_name_;
  mutable std::mutex mutex_;
  std::shared_ptr<const NodeTopology> topology_ = std::make_shared<NodeTopology>();
  DraPortNames names_;
};

} // namespace kube_rdma
