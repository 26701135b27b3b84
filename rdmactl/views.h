#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/node/device_model.h"
#include "common/pools/nccl_settings.h"
#include "common/pools/plugin_config.h"
#include "common/util/result.h"

// What rdmactl's devices, gids and nccl-env commands print: pure functions over the discovered
// topology, text or JSON.
namespace kube_rdma {

// netdev -> "Up" / "Down", as ibdev2netdev prints the link (read from sysfs by the caller).
using NetdevStates = std::map<std::string, std::string>;

// One line per port, like `ibdev2netdev -v`: "mlx5_0 port 1 ==> eth0 (Up)" then the PCI address,
// MT type, board id, firmware, port state, link layer and rate, NUMA node, and the management/VF
// role; then one line per GPU with its closest HCAs and NCCL path type.
std::string renderDevicesText(const NodeTopology& topology, const NetdevStates& states);
std::string renderDevicesJson(const NodeTopology& topology, const NetdevStates& states);

// One row of show_gids.
struct GidRow {
  std::string device;
  uint32_t port = 0;
  uint32_t index = 0;
  std::string gid;
  std::string ipv4;
  std::string version; // "v1", "v2" or "" when the type could not be read
  std::string netdev;
  // "this" when the GID's address is assigned in the namespace rdmactl runs in (the host's, or a
  // pod's under `kubectl exec` or `ip netns exec`), else "other": the kernel lists every
  // namespace's macvlan and ipvlan addresses on the parent's port (docs/pod-networks.md).
  std::string netns;
};

// Every used GID (show_gids skips the all-zero and the bare fe80:: entries), of one device when
// `device` is not empty. An unknown device is an error naming the known ones.
Result<std::vector<GidRow>> gidRows(const NodeTopology& topology, const std::string& device);

// show_gids' tab-separated columns DEV PORT INDEX GID IPv4 VER DEV, then NETNS, ending
// "n_gids_found=N".
std::string renderGidsText(const std::vector<GidRow>& rows);
// A JSON array of {device, port, index, gid, ipv4, version, netdev, netns}.
std::string renderGidsJson(const std::vector<GidRow>& rows);

// The NCCL settings the device plugin would hand a container granted every HCA of a pool.
struct PoolNcclEnv {
  std::string pool; // resource name
  std::vector<std::string> devices;
  NcclEnv env;
};

// `pool` names a configured resource; empty picks the first pool with HCAs on this node. Errors:
// an unknown pool (the known ones are named), a pool or node without HCAs, or the settings'
// own errors (no ACTIVE port).
Result<PoolNcclEnv> poolNcclEnv(const NodeTopology& topology, const PluginConfig& config,
                                const std::string& pool);

// {"pool", "devices", "env": {NAME: VALUE, ...} in order, "nccl_conf": text}.
Result<std::string> renderNcclEnvJson(const PoolNcclEnv& settings);

} // namespace kube_rdma
