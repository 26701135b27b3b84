#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/node/device_model.h"
#include "common/pools/plugin_config.h"
#include "common/util/result.h"

// NodePrepareResources as a pure function (docs/dra.md "Preparing a claim"): from the
// ResourceClaim the API server returns to the CDI spec and the nccl.conf to write and the devices
// to answer the kubelet with. Writing the files is ClaimStore's job.
namespace kube_rdma {

// The CDI kind of the per-claim specs; a device ID is "rdma.kube-rdma.io/claim=<uid>-<device>".
inline constexpr const char* kDraCdiKind = "rdma.kube-rdma.io/claim";

// How the kubelet names a claim.
struct ClaimRef {
  std::string namespace_name;
  std::string name;
  std::string uid;
  bool operator==(const ClaimRef&) const = default;
};

// One device of the kubelet's answer.
struct PreparedDevice {
  std::vector<std::string> request_names;
  std::string pool_name;
  std::string device_name;
  std::vector<std::string> cdi_device_ids;
  std::string share_id; // the allocation's shareID on a device shared by many claims; or empty
  bool operator==(const PreparedDevice&) const = default;
};

// A file to write, host path and content.
struct ClaimFile {
  std::string path;
  std::string content;
  bool operator==(const ClaimFile&) const = default;
};

struct PreparedClaim {
  std::vector<PreparedDevice> devices;
  // The nccl.conf (when the merged RdmaConfig mounts one) first, then the CDI spec that mounts it.
  std::vector<ClaimFile> files;
};

// What the driver knows about where it runs.
struct PrepareContext {
  std::string node_name; // the pool's name
  std::string cdi_dir;   // where the CDI specs go
  std::string state_dir; // where the nccl.conf files go
  PluginConfig config;   // which ports are published, NCCL defaults, the memlock hook
};

// "<cdi_dir>/rdma.kube-rdma.io-claim_<uid>.json" and "<state_dir>/nccl-claim-<uid>.conf".
std::string claimCdiSpecPath(const std::string& cdi_dir, const std::string& uid);
std::string claimNcclConfPath(const std::string& state_dir, const std::string& uid);

// Checks that `claim` (a resource.k8s.io/v1 ResourceClaim as the API server returns it) is the
// one the kubelet named (same uid), takes the allocation results of this driver and this node's
// pool, lays the opaque RdmaConfigs for this driver over the pool's NCCL options (class configs
// first, then the claim's; later keys win; only configs for requests with results here) and
// renders:
// - one CDI spec: per device its uverbs node; for the claim rdma_cm, the memlock hook,
//   KUBE_RDMA_CDI/KUBE_RDMA_DEVICES/KUBE_RDMA_NETDEVS/KUBE_RDMA_CLAIM, and the nccl.conf mount.
//   No NCCL_* variable: a CDI env edit would replace the pod's own value (docs/dra.md).
// - the nccl.conf with the NCCL settings of exactly the claim's ports (computeNcclSettings).
// Errors say what is wrong with the claim; a bad RdmaConfig names its JSON path.
Result<PreparedClaim> renderClaim(const nlohmann::json& claim, const ClaimRef& ref,
                                  const NodeTopology& topology, const PrepareContext& context);

} // namespace kube_rdma
