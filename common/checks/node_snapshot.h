#pragma once

#include <optional>
#include <string>

#include "common/node/device_model.h"
#include "common/checks/node_checks.h"
#include "common/node/sysfs_discovery.h"

// The I/O edge of the node checks: reads the files node_checks.h judges, under the sysfs, proc
// and dev roots, for the devices of a discovered topology.
namespace kube_rdma {

// What the reader cannot find under the roots: the process's own libibverbs and environment, and
// a program's output. The caller supplies them (rdmactl: loadedLibibverbs(), its environment and
// `ofed_info -s`).
struct ProcessSide {
  FileRead libibverbs;
  FileRead ofed_info;
  WorkloadFiles workload; // in_pod and kube_rdma_cdi; limits and status are read here
};

// Reads every file the checks need: link attributes, config space and IOMMU group type of each
// HCA, GPU and bridge on their PCIe paths; MTU and ECN files of each RoCE port's netdev; kernel,
// module and driver versions; <proc>/1/limits and status. An unreadable file is a FileRead
// without text, never an error: the check that needs it says unknown.
NodeSnapshot readNodeSnapshot(const DiscoveryRoots& roots, const NodeTopology& topology,
                              ProcessSide process);

// The realpath of the libibverbs this process has loaded ("/usr/lib/x86_64-linux-gnu/
// libibverbs.so.1.14.44.0"); without text when it cannot be told.
FileRead loadedLibibverbs();

// The kube-rdma.io/gpudirect-rdma label: the node has NVIDIA GPUs and `rdmactl doctor`'s GPUDirect
// check (checkGpuDirect: nvidia_peermem or nv_peer_mem loaded, or dma-buf possible) passes on the
// files under `roots` as they are now. It reads those files and more (a NodeSnapshot): the
// daemons ask through GpuDirectReadiness (nfd_feature_writer.h), which says how often.
bool gpuDirectReady(const NodeTopology& topology, const DiscoveryRoots& roots);

} // namespace kube_rdma
