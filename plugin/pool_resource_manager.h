#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/node/device_model.h"
#include "common/pools/nccl_settings.h"
#include "common/pools/pools.h"
#include "plugin/device_list_store.h"
#include "plugin/resource_manager.h"
#include "plugin/state_writer.h"

namespace kube_rdma {

// The node as health sees it now: the topology with fresh port states, and which
// /dev/infiniband/uverbsN nodes exist under --dev-root.
struct NodeHealthView {
  std::shared_ptr<const NodeTopology> topology;
  std::set<std::string> uverbs_present; // "uverbs3"
};

// The device list a pool advertises: shared pools N IDs "0".."N-1", all Healthy while any HCA is
// usable; exclusive pools one ID per HCA (its PCI address) with its NUMA node.
std::vector<PluginDevice> poolDevices(const NodePool& pool, const NodeHealthView& node);

// An exclusive pool's ID of an HCA: its PCI address (stable across renames), else its name.
std::string exclusiveId(const RdmaDevice& device);

// The CDI kind of a pool's devices: "kube-rdma.io/rdma_hca" for "rdma/hca".
std::string cdiKind(const std::string& resource_name);

// A pool's ResourceManager: its devices and health, validation, preferred allocation, and the
// Allocate answer (device nodes, NCCL env, nccl.conf mount, CDI names).
class PoolResourceManager final : public ResourceManager {
public:
  // cdi: whether answers name the granted devices as CDI devices too. gid_per_container: whether
  // the pool's CDI spec has kube-rdma-nccl-hook resolve NCCL_IB_GID_INDEX in each container's own
  // network namespace; the answers' env then leaves it out, since a variable in the environment
  // hides the container's nccl.conf line (docs/pod-networks.md).
  PoolResourceManager(NodePool pool, bool cdi, bool gid_per_container, const StateWriter& state)
      : pool_(std::move(pool)), cdi_(cdi), gid_per_container_(gid_per_container), state_(state),
        devices_(poolDevices(pool_, node_)) {}

  const NodePool& pool() const { return pool_; }
  bool gidPerContainer() const { return gid_per_container_; }
  // Recomputes health; @return whether the advertised list changed.
  bool update(const NodeHealthView& node);
  void close() { store_.close(); }
  // Wakes every stream to send the list again (e.g. so that a new resend interval applies now).
  void resend() { store_.forceResend(); }

  // ResourceManager
  std::string resourceName() const override { return pool_.spec.resource_name; }
  bool preferredAllocationAvailable() const override {
    return pool_.spec.mode == PoolMode::kExclusive;
  }
  DeviceList devices() const override { return store_.current(); }
  DeviceList waitForChange(uint64_t seen, std::chrono::milliseconds timeout,
                           std::stop_token stop) const override {
    return store_.waitForChange(seen, timeout, stop);
  }
  Result<std::vector<std::string>> preferredAllocation(const std::vector<std::string>& available,
                                                       const std::vector<std::string>& must_include,
                                                       int32_t size) const override;
  Result<ContainerAllocation> allocate(const std::vector<std::string>& ids) override;

private:
  const NodePool pool_;
  const bool cdi_;
  const bool gid_per_container_;
  const StateWriter& state_;
  DeviceListStore store_;
  mutable std::mutex mutex_;
  NodeHealthView node_;
  std::vector<PluginDevice> devices_;                       // poolDevices(pool_, node_)
  std::vector<std::pair<std::string, std::string>> usable_; // (HCA, exclusive ID), pool order
};
using PoolResourceManagerPtr = std::shared_ptr<PoolResourceManager>;

// The answer for `granted` HCAs, as a pure function: uverbs nodes of each plus rdma_cm ("rw",
// host path = container path under /dev/infiniband), the env, the nccl.conf mount at
// `nccl_conf_host_path` when the pool mounts one, and CDI names when `cdi`.
ContainerAllocation buildAllocation(const NodePool& pool, const NodeTopology& topology,
                                    const std::vector<std::string>& granted, const NcclEnv& env,
                                    const std::string& nccl_conf_host_path, bool cdi);

} // namespace kube_rdma
