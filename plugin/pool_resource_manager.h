#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/device_model.h"
#include "common/nccl_settings.h"
#include "plugin/device_list_store.h"
#include "plugin/resource_manager.h"
#include "plugin/state_writer.h"

namespace kube_rdma {

// What the plugin needs to know of one configured pool.
struct PoolInventory {
  std::string name;          // the pool's name in the config (for logs and metrics)
  std::string resource_name; // "rdma/shared"
  bool exclusive = false;
  uint32_t shared_count = 0;  // shared pools: how many IDs
  std::vector<HcaPort> ports; // the ports the selector took, in device order
  bool mount_nccl_conf = true;
  std::string nccl_conf_container_path = "/etc/nccl.conf";
  std::string cdi_kind; // "kube-rdma.io/hca"; empty: no cdi_devices in answers

  std::vector<std::string> hcas() const; // device names, in order, once each
  bool operator==(const PoolInventory&) const = default;
};

// The node as health sees it now: the topology with fresh port states, and which
// /dev/infiniband/uverbsN nodes exist under --dev-root.
struct NodeHealthView {
  std::shared_ptr<const NodeTopology> topology;
  std::set<std::string> uverbs_present; // "uverbs3"
};

// An HCA of the pool is usable when it is in the topology, has a uverbs node under --dev-root
// and at least one of the pool's ports on it is ACTIVE.
bool hcaUsable(const PoolInventory& pool, const NodeHealthView& node, const std::string& hca);

// The device list a pool advertises: shared pools N IDs "0".."N-1", all Healthy while any HCA is
// usable; exclusive pools one ID per HCA (its PCI address) with its NUMA node.
std::vector<PluginDevice> poolDevices(const PoolInventory& pool, const NodeHealthView& node);

// The NCCL environment for exactly `granted` (common/ computes it from the pool's options).
using NcclEnvFn =
    std::function<Result<NcclEnv>(const NodeTopology&, const std::vector<std::string>& granted)>;

// A pool's ResourceManager: its devices and health, validation, preferred allocation, and the
// Allocate answer (device nodes, NCCL env, nccl.conf mount, CDI names).
class PoolResourceManager final : public ResourceManager {
public:
  PoolResourceManager(PoolInventory pool, NcclEnvFn nccl_env, const StateWriter& state);

  const PoolInventory& pool() const { return pool_; }
  // Recomputes health; @return whether the advertised list changed.
  bool update(const NodeHealthView& node);
  void close() { store_.close(); }

  // ResourceManager
  std::string resourceName() const override { return pool_.resource_name; }
  bool preferredAllocationAvailable() const override { return pool_.exclusive; }
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
  const PoolInventory pool_;
  const NcclEnvFn nccl_env_;
  const StateWriter& state_;
  DeviceListStore store_;
  mutable std::mutex mutex_;
  NodeHealthView node_;
};
using PoolResourceManagerPtr = std::shared_ptr<PoolResourceManager>;

// The answer for `granted` HCAs, as a pure function: uverbs nodes of each plus rdma_cm ("rw",
// host path = container path under /dev/infiniband), the env, and the nccl.conf mount at
// `nccl_conf_host_path` when the pool mounts one.
ContainerAllocation buildAllocation(const PoolInventory& pool, const NodeTopology& topology,
                                    const std::vector<std::string>& granted, const NcclEnv& env,
                                    const std::string& nccl_conf_host_path);

} // namespace kube_rdma
