#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/device_model.h"
#include "common/gid_selection.h"
#include "common/nccl_settings.h"
#include "common/result.h"

// The NCCL settings of one container, resolved at its creation in its own network namespace
// (kube-rdma-nccl-hook, rdmactl nccl-env). The node daemons write the node's values before the
// pod's network exists; on a pod network the kernel has by then added the pod's own addresses as
// GIDs of the shared port, so the GID index is the container's, not the host's
// (docs/pod-networks.md).
namespace kube_rdma {

struct ContainerNcclConf {
  NcclEnv settings;           // the container's nccl.conf
  GidChoice choice;           // of the ports NCCL_IB_HCA names, in the container's namespace
  std::vector<HcaPort> ports; // those ports, in NCCL_IB_HCA's order
  bool own_gid_index = false; // settings' NCCL_IB_GID_INDEX is the container's own
};

// `node_conf` is what the node daemon wrote for the container's ports (NCCL_IB_HCA as "=dev:port"
// entries, NCCL_IB_GID_INDEX by the host's rule or absent). `topology` was discovered in the
// container's network namespace: its addresses are the container's. When every RoCE port has a
// GID of that namespace at the same index, NCCL_IB_GID_INDEX becomes that index (added after
// NCCL_IB_DISABLE when the node had none); otherwise the node's settings stay as they are and
// `choice` says why (ports disagree, no GID of the namespace). Errors: no NCCL_IB_HCA, an entry
// that is not "dev:port", a port the topology does not have.
// The "dev:port" entries of the node's NCCL_IB_HCA, the ports to read (discoverPorts); none when
// it has no NCCL_IB_HCA. Entries without a port are left out (resolveContainerNcclConf says so).
std::vector<std::pair<std::string, uint32_t>> hcaPortsOf(const NcclEnv& node_conf);

Result<ContainerNcclConf> resolveContainerNcclConf(const NcclEnv& node_conf,
                                                   const NodeTopology& topology,
                                                   const GidSelectionPolicy& policy);

} // namespace kube_rdma
