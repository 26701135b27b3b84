#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <optional>

#include "common/node/device_model.h"
#include "common/node/gid_selection.h"
#include "common/pools/hook_outcomes.h"
#include "common/util/log.h"
#include "common/pools/nccl_settings.h"
#include "common/pools/oci_hook.h"
#include "common/util/result.h"
#include "common/node/sysfs_discovery.h"

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

inline constexpr unsigned kDefaultNcclHookDeadlineSeconds = 2;

// kube-rdma-nccl-hook's command line, as the node daemons write it into the CDI specs. The NRI
// plugin reads the same arguments from the container's createContainer hook: the pool's address
// family and range come with the container.
struct NcclHookArgs {
  std::string container_path = "/etc/nccl.conf";
  GidSelectionPolicy policy;
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
  std::string log_file;
  // Past it the hook gives up and the container keeps the node's nccl.conf: no container start
  // waits longer on it.
  unsigned deadline_seconds = kDefaultNcclHookDeadlineSeconds;
  std::string problem; // a bad argument: nothing is changed
  bool help = false;
  bool version = false;
};

// By hand, as kube-rdma-memlock-hook's: a bad argument must still let the container start.
NcclHookArgs parseNcclHookArgs(const std::vector<std::string>& args);

// What one container gets, decided the same way by kube-rdma-nccl-hook (in the container's
// namespaces, at createContainer) and the NRI plugin (in the node daemon, at CreateContainer),
// with the line each logs.
struct ContainerGidDecision {
  NcclHookOutcome outcome = NcclHookOutcome::kError;
  LogLevel level = LogLevel::kInfo;
  std::string message;
  std::vector<LogField> fields;              // pod= and container= first
  std::string node_conf;                     // the host path of the container's nccl.conf mount
  std::optional<ContainerNcclConf> resolved; // kOwnGidIndex: the container's settings
};

struct ContainerGidInputs {
  std::string container_id;                      // for the log
  std::string container_path = "/etc/nccl.conf"; // the nccl.conf mount in the container
  // sysfs, and a /proc whose net/ is the container's namespace's (/proc in the hook,
  // /proc/<sandbox pid> of the host's for the NRI plugin).
  DiscoveryRoots roots;
  GidSelectionPolicy policy;
  bool cluster_network_only = false; // loopback and veth alone: no GID of its own to look for
  // The kernel's RDMA netns mode is exclusive (rdmaNetnsIsExclusive): a device moved into the
  // container's namespace shows only in a sysfs mounted there, so the GID tables are read from
  // the container's own /sys (the runtime mounts it before createContainer), not roots.sysfs_root.
  bool exclusive_rdma_netns = false;
};

// Whether `<sysfs_root>/module/ib_core/parameters/netns_mode` says "N": the kernel's exclusive
// RDMA netns mode (`rdma system set netns exclusive`). Absent or unreadable: shared, the default.
bool rdmaNetnsIsExclusive(const std::string& sysfs_root);

// Left alone: a hostNetwork container, a user's own NCCL_IB_GID_INDEX in the environment, no
// nccl.conf mount. Else the node's nccl.conf and the granted ports' GID tables are read and
// resolveContainerNcclConf applied; in exclusive mode the tables are the container's /sys's, and
// a spec without a root filesystem and a /sys mount is kExclusiveNetns. Never throws; trouble is
// kError with the reason logged.
ContainerGidDecision decideContainerGid(const ContainerSpec& spec, const ContainerGidInputs& in);

} // namespace kube_rdma
