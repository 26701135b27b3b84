#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/node/device_model.h"
#include "common/node/gid_selection.h"

// Discovery of RDMA devices, their ports and GID tables, NVIDIA GPUs and the management NIC from
// sysfs and procfs in the kernel's formats (drivers/infiniband/core/sysfs.c), under configurable
// roots so tests and rdmactl can point it at a fixture tree.
namespace kube_rdma {

struct DiscoveryRoots {
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
  std::string dev_root = "/dev"; // read by the node checks (node_snapshot.h), not by discovery
};

// The whole node. Devices are sorted by name in natural order (mlx5_2 before mlx5_10), ports by
// number, GIDs by index, GPUs by PCI address. An attribute that is missing, unreadable or
// malformed skips that entry only (a GID, a port's state, a device's NUMA node...) with a
// DiscoveryWarning naming the path; a GID attribute that reads with an error (the kernel's EINVAL
// for unused entries and IB netdevs) is normal and not a warning.
//
// How much of each port's GID table is read: the tables are the bulk of sysfs discovery (up to
// 256 entries per port, three files each). gid_table_len is always the full table's length.
enum class GidTables {
  kRead,          // every entry
  kUntilSelected, // a RoCE port's entries in index order until every policy in GidScan::selecting
                  // has met the entry NCCL's rule picks among the namespace's own GIDs, or the
                  // end of the table; GID 0 only of an InfiniBand port. selectOwnGidIndex and
                  // chooseGidIndex answer as with kRead.
  kFirstOnly,     // GID 0 alone (it still names the port's netdev), for callers that take the
                  // tables from libibverbs
};
struct GidScan {
  GidTables tables = GidTables::kRead;
  std::vector<GidSelectionPolicy> selecting; // kUntilSelected only
  bool operator==(const GidScan&) const = default;
};
NodeTopology discoverFromSysfs(const DiscoveryRoots& roots, const GidScan& scan = {});

// Only the named ports, as discoverFromSysfs reads them (state, link layer, rate, GID table by
// `scan`; not their netdev), with the namespace's addresses from roots.proc_root: for a caller
// that needs a few ports' GIDs and nothing else of the node (kube-rdma-nccl-hook, at every
// container's creation). A device or port that cannot be read is left out with a warning.
NodeTopology discoverPorts(const DiscoveryRoots& roots,
                           const std::vector<std::pair<std::string, uint32_t>>& ports,
                           const GidScan& scan);

// The health path: one port's state as it is now.
struct PortStateSample {
  std::string device;
  uint32_t port = 0;
  bool present = false; // false when the device has vanished from sysfs
  PortState state = PortState::kNop;
  bool operator==(const PortStateSample&) const = default;
};

// Names under <sysfs_root>/class/infiniband, sorted: the devices sysfs has now.
std::set<std::string> listRdmaDeviceNames(const std::string& sysfs_root);

// Re-reads ports/<n>/state of every port in `known` for a periodic caller. A device missing from
// `listed` (listRdmaDeviceNames) is not present; a state that cannot be read or parsed while the
// device is listed is reported as kNop (not usable).
//
// Each state file stays open between calls and is re-read with pread at offset 0 (kernfs makes the
// text anew on every read from offset 0): no path walk through sysfs's symlinks on every sample,
// the bulk of the plugin's idle CPU. A file is opened again when its read fails (a removed
// device's attribute answers ENODEV) or it was unlinked (fixtures replace files; the kernel does
// not); files of ports no longer known or listed are closed.
class PortStateFiles {
public:
  explicit PortStateFiles(std::string sysfs_root) : sysfs_root_(std::move(sysfs_root)) {}
  ~PortStateFiles();
  PortStateFiles(const PortStateFiles&) = delete;
  PortStateFiles& operator=(const PortStateFiles&) = delete;

  std::vector<PortStateSample> read(const NodeTopology& known, const std::set<std::string>& listed);

private:
  const std::string sysfs_root_;
  std::map<std::pair<std::string, uint32_t>, int> open_; // (device, port) -> descriptor
};

// One read of every port's state, the files closed after it.
std::vector<PortStateSample> readPortStates(const std::string& sysfs_root,
                                            const NodeTopology& known);

// Natural order of names: digit runs compare as numbers ("mlx5_2" < "mlx5_10").
bool naturalLess(const std::string& a, const std::string& b);

} // namespace kube_rdma
