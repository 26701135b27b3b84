#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/node/device_model.h"
#include "common/node/gid_selection.h"
#include "common/pools/memlock.h"
#include "common/pools/nccl_settings.h"
#include "common/util/result.h"

// The device plugin's JSON config (`--config`), documented key by key in docs/plugin-config.md.
// Parsing is strict: unknown keys, wrong types, out-of-range values and duplicate resource names
// are errors carrying the JSON path of the offending field.
namespace kube_rdma {

enum class PoolMode { kShared, kExclusive };

// Which ports a pool takes. Every list that is given must match (a device-name glob AND a vendor
// ...); within one list any entry may match. Empty lists match everything.
struct PoolSelector {
  std::optional<LinkLayer> link_layer;    // per port; nullopt: any
  std::vector<std::string> device_names;  // fnmatch globs over the RDMA device name
  std::vector<std::string> netdev_names;  // globs over the port's netdev (or the device's)
  std::vector<std::string> vendors;       // "0x15b3", lower case
  std::vector<std::string> device_ids;    // "0x101b", lower case
  std::vector<std::string> drivers;       // "mlx5_core"
  std::vector<std::string> pci_addresses; // "0000:3b:00.0", lower case
  std::vector<std::string> exclude;       // device-name globs taken out after the rest matched
  bool include_management = false;        // the HCA carrying the default route
  bool include_vfs = false;               // SR-IOV virtual functions
  bool operator==(const PoolSelector&) const = default;
};

enum class GidIndexMode {
  kUnset,  // NCCL >= 2.21 picks the GID itself; older NCCL takes GID 0 (link-local RoCE v1)
  kAgreed, // NCCL_IB_GID_INDEX = the index every selected RoCE port agrees on, else unset
  kFixed,  // NCCL_IB_GID_INDEX = gid_index
};

struct NcclPoolOptions {
  // "agreed" by default: every NCCL version honours a set index, while an unset one means GID 0
  // to NCCL before 2.21, which the guide's images still run.
  GidIndexMode gid_index_mode = GidIndexMode::kAgreed;
  uint32_t gid_index = 0;        // kFixed only
  GidSelectionPolicy gid_policy; // how "agreed" picks each port's GID (NCCL's own rule)
  bool nccl_conf_enabled = true;
  std::string nccl_conf_path = "/etc/nccl.conf"; // inside the container
  NcclEnv env;                                   // extra NAME=VALUE, by name
  bool operator==(const NcclPoolOptions&) const = default;
};

struct PoolSpec {
  std::string resource_name; // "rdma/hca"
  PoolSelector selector;
  PoolMode mode = PoolMode::kShared;
  std::optional<uint32_t> shared_count; // nullopt: "auto", see sharedDeviceCount()
  NcclPoolOptions nccl;
  bool operator==(const PoolSpec&) const = default;
};

// The memlock hook the CDI specs name (docs/memlock.md). Paths are on the host, where the runtime
// runs the hook; the DaemonSet's init container installs it there.
struct MemlockHookConfig {
  MemlockLimit limit; // kOff: no hook in the specs
  std::string hook_path = "/var/lib/kube-rdma/bin/kube-rdma-memlock-hook";
  std::string log_file = "/var/lib/kube-rdma/memlock-hook.log";
  bool operator==(const MemlockHookConfig&) const = default;
};

// The hook the CDI specs name so that a container on a pod network gets the RoCE GID index of its
// own network namespace (docs/pod-networks.md). Paths are on the host.
struct NcclHookConfig {
  bool enabled = true; // "perContainerGidIndex"
  std::string hook_path = "/var/lib/kube-rdma/bin/kube-rdma-nccl-hook";
  std::string log_file = "/var/lib/kube-rdma/nccl-hook.log";
  std::string sysfs_root = "/sys"; // the host's sysfs, where the hook reads the GID tables
  bool operator==(const NcclHookConfig&) const = default;
};

// Whether containers given ports with `nccl` get their GID index resolved per container: the
// hook is on, the pool's index is "agreed" (a fixed one is the operator's), and an nccl.conf is
// mounted (the hook replaces the container's copy).
bool resolvesGidPerContainer(const NcclHookConfig& hook, const NcclPoolOptions& nccl);

struct PluginConfig {
  std::vector<PoolSpec> pools; // in order: a port belongs to the first pool that selects it
  uint32_t resend_interval_seconds = 30; // periodic ListAndWatch re-send
  uint32_t health_poll_ms = 500;         // port state re-read period
  // A pod holding RDMA ports whose data counters have not moved for this long is flagged
  // (usage/unused_rdma.h); 0: off.
  uint32_t unused_rdma_after_seconds = 900;
  MemlockHookConfig memlock; // CDI mode only
  NcclHookConfig nccl_hook;  // CDI mode only
  bool operator==(const PluginConfig&) const = default;
};

// Shared-count bounds and the "auto" rule: 16 IDs per HCA in the pool, at most 1024.
constexpr uint32_t kMaxSharedCount = 1024;
constexpr uint32_t kAutoSharedPerHca = 16;

// How many synthetic IDs a shared pool advertises for `hca_count` HCAs: the fixed count, or
// "auto" = 16 x HCAs capped at 1024 (0 when the pool has no HCA). Exclusive pools: one per HCA.
uint32_t sharedDeviceCount(const PoolSpec& pool, size_t hca_count);

// DESIGN.md's defaults: rdma/hca = InfiniBand ports, rdma/shared = Ethernet (RoCE) ports, both
// shared with "auto" counts, management HCA and VFs left out, GID index "agreed", nccl.conf mounted
// at /etc/nccl.conf.
PluginConfig defaultPluginConfig();

class ObjectReader;

// Reads `key` of `r` as a memlock limit: "unlimited", "off" or an integer byte count of at least
// kMinMemlockBytes; absent -> `fallback`. Shared with the DRA driver's RdmaConfig.
MemlockLimit readMemlockLimit(ObjectReader& r, const std::string& key, MemlockLimit fallback);

// Reads the NCCL keys a pool's "nccl" object and the DRA driver's RdmaConfig share: gidIndex,
// addrFamily, addrRange, ncclConf {enabled, containerPath} and env, into `n`, which holds the
// defaults (the DRA driver layers RdmaConfigs with mergeRdmaConfig, not here). Does not call
// r.finish(): the caller's object may have more keys.
void readNcclOptions(ObjectReader& r, NcclPoolOptions& n);

// Parses and validates the config text. "pools" absent means the default pools.
Result<PluginConfig> parsePluginConfig(const std::string& json_text);

// The config file at `path` read and parsed, errors prefixed with the path; the defaults when
// `path` is empty (no --config). The plugin, the DRA driver and rdmactl read it alike.
Result<PluginConfig> loadPluginConfig(const std::string& path);

// Kubernetes' DNS subdomain: DNS labels (RFC 1123: at most 63 of a-z, 0-9 and '-', not at either
// end) joined by '.', at most 253 characters.
bool isDnsSubdomain(std::string_view s);

// Kubernetes' IsExtendedResourceName: "domain/name", a DNS subdomain and a qualified name, not in
// the kubernetes.io namespace. The error says which part is wrong.
Status validateExtendedResourceName(const std::string& name);

} // namespace kube_rdma
