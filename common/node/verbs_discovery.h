#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/node/device_model.h"
#include "common/util/log.h"
#include "common/util/result.h"
#include "common/node/sysfs_discovery.h"

namespace CLI {
class App;
} // namespace CLI

// The rdma-core backend (libibverbs: ibv_get_device_list, ibv_query_device/ibv_query_port,
// ibv_query_gid_table from rdma-core >= 32) and the run-time choice between it and sysfs.
namespace kube_rdma {

struct VerbsScan {
  std::vector<RdmaDevice> devices; // names, GUIDs, firmware, ports and GID tables; no PCI facts
  std::vector<DiscoveryWarning> warnings;
  // Devices the library lists but could not open or query, each with why.
  std::vector<DiscoveryWarning> unusable;
};

// Which backend discovery uses (--discovery; docs/discovery.md).
enum class DiscoveryBackend {
  kAuto,  // libibverbs when it reads the sysfs of --sysfs-root and lists a device, else sysfs
  kSysfs, // sysfs alone; libibverbs is not called
  kVerbs, // libibverbs, or an error saying why it cannot serve; never a silent sysfs fallback
};
Result<DiscoveryBackend> parseDiscoveryBackend(std::string_view text); // "auto", "sysfs", "verbs"

// Adds --discovery sysfs|verbs|auto, the discovery backend (docs/discovery.md).
void addDiscoveryOption(CLI::App& app, DiscoveryBackend& backend);
std::string toString(DiscoveryBackend backend);

// The sysfs root libibverbs reads, given the value of SYSFS_PATH in its environment (nullptr
// when unset): that value without trailing slashes, else "/sys" (rdma-core's
// ibv_get_sysfs_path, which ignores SYSFS_PATH only in setuid programs).
std::string libibverbsSysfsRoot(const char* sysfs_path_env);

// Where the verbs view of the node comes from; injected so the choice is testable without
// hardware.
class VerbsDeviceSource {
public:
  virtual ~VerbsDeviceSource() = default;
  // The sysfs root whose devices this source lists ("/sys" for libibverbs).
  virtual std::string sysfsRoot() const = 0;
  // The devices the library lists; an error says why it lists none.
  virtual Result<VerbsScan> scan() = 0;
};

// libibverbs itself, reading sysfs at $SYSFS_PATH (default /sys). Lists only devices whose
// /dev/infiniband/uverbsN exists (rdma-core drops the others, and that directory is compiled
// into it), like NCCL sees them.
class LibibverbsSource final : public VerbsDeviceSource {
public:
  // VerbsDeviceSource
  std::string sysfsRoot() const override;
  Result<VerbsScan> scan() override;
};

// The node as `backend` says, after logging which backend serves and why:
//  - kSysfs: discoverFromSysfs.
//  - kAuto: libibverbs when roots.sysfs_root is the source's own root and it lists a device
//    (devices it cannot open are left out with a warning); otherwise sysfs.
//  - kVerbs: libibverbs, or an error naming why it cannot serve: it reads another sysfs root, it
//    fails, it lists no device, or it cannot open one it lists.
// libibverbs' devices are merged with the sysfs-only facts (PCI, NUMA, netdevs, uverbs, SR-IOV,
// GPUs, management NIC; the GID tables then come from libibverbs only). `sysfs_gids` is what
// sysfs discovery reads of the GID tables (kFirstOnly for callers that do not use them).
Result<NodeTopology> discoverNode(const DiscoveryRoots& roots, DiscoveryBackend backend,
                                  Logger& logger, VerbsDeviceSource& source,
                                  const GidScan& sysfs_gids = {});
Result<NodeTopology> discoverNode(const DiscoveryRoots& roots, DiscoveryBackend backend,
                                  Logger& logger, const GidScan& sysfs_gids = {});

// Conversions from libibverbs' numbers to the kernel's sysfs texts, so both backends agree.
struct PortRate {
  std::string text;  // "200 Gb/sec (4X HDR)"
  uint32_t gbps = 0; // 200
};
// active_width (1, 2, 4, 8, 16 = 1X, 4X, 8X, 12X, 2X) and active_speed (1 SDR .. 128 NDR).
std::optional<PortRate> portRate(uint8_t active_width, uint8_t active_speed);
std::string physStateName(int phys_state); // 5 -> "LinkUp", as the kernel prints it
GidType gidTypeFromVerbs(uint32_t ibv_gid_type);
LinkLayer linkLayerFromVerbs(uint8_t ibv_link_layer);
std::string guidText(uint64_t host_order_guid); // "0c42:a103:0065:d6b6"

} // namespace kube_rdma
