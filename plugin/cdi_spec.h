#pragma once

#include <string>

#include "common/node/device_model.h"
#include "common/pools/plugin_config.h"
#include "common/pools/pools.h"

namespace kube_rdma {

// The CDI spec (cdiVersion 0.5.0) of a pool's devices: kind cdiKind(resource), one device per
// HCA named after it with its uverbs node. Every device of the kind also gets rdma_cm,
// KUBE_RDMA_CDI=1 (the sign that the runtime applied CDI at all) and, unless memlock is off, the
// memlock hook at createRuntime (docs/memlock.md) and, for a pool with RoCE ports whose GID index
// is resolved per container, kube-rdma-nccl-hook at createContainer (docs/pod-networks.md). The
// runtime applies it for the `cdi_devices` names that Allocate returns.
std::string cdiSpecJson(const NodePool& pool, const NodeTopology& topology,
                        const MemlockHookConfig& memlock, const NcclHookConfig& nccl_hook);

// "<cdi_dir>/kube-rdma.io-rdma_shared.json" for "rdma/shared".
std::string cdiSpecPath(const std::string& cdi_dir, const std::string& resource_name);

} // namespace kube_rdma
