#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// The node's RDMA and GPU hardware as plain structs. Discovery (sysfs or libibverbs) fills them;
// everything else (pools, GID choice, NCCL rendering, rdmactl) reads them.
namespace kube_rdma {

enum class GidType { kUnknown, kRoceV1, kRoceV2 }; // kRoceV1 is the kernel's "IB/RoCE v1"

// A 128-bit GID, or an IP address in GID form (IPv4 mapped into ::ffff:0:0/96).
struct Gid {
  std::array<uint8_t, 16> bytes{};
  auto operator<=>(const Gid&) const = default; // by bytes: NamespaceAddresses' order
};

// The IP addresses assigned in one network namespace, in GID form, sorted by bytes, no duplicates
// (common/node/namespace_addresses.h reads them).
using NamespaceAddresses = std::vector<Gid>;

struct GidEntry {
  uint32_t index = 0;
  std::string gid;                  // kernel form: "0000:0000:0000:0000:0000:ffff:0a98:000c"
  GidType type = GidType::kUnknown; // unknown when gid_attrs/types reads EINVAL or is absent
  std::string netdev;               // empty when gid_attrs/ndevs reads EINVAL (all IB GIDs)
  std::string ipv4;                 // dotted quad when the GID is IPv4-mapped, else empty
  bool operator==(const GidEntry&) const = default;
};

enum class LinkLayer { kUnknown, kInfiniBand, kEthernet };

// Values of enum ibv_port_state; the sysfs "state" file prints the same number.
enum class PortState : int {
  kNop = 0,
  kDown = 1,
  kInit = 2,
  kArmed = 3,
  kActive = 4,
  kActiveDefer = 5
};

struct Port {
  uint32_t number = 0;
  PortState state = PortState::kNop;
  int phys_state = 0;          // 5 = LinkUp
  std::string phys_state_name; // "LinkUp"
  LinkLayer link_layer = LinkLayer::kUnknown;
  std::string rate;       // "100 Gb/sec (4X EDR)"
  uint32_t rate_gbps = 0; // 100
  uint32_t lid = 0;
  uint32_t gid_table_len = 0; // number of gids/<i> entries, used or not
  std::vector<GidEntry> gids; // only used (non-zero) entries, by index
  std::string netdev;         // the port's netdev (RoCE: ndevs of GID 0; IB: IPoIB match)

  bool active() const { return state == PortState::kActive; }
  bool operator==(const Port&) const = default;
};

struct RdmaDevice {
  std::string name;      // "mlx5_1" or a udev name such as "rocep1s0f0"
  std::string node_guid; // "0c42:a103:0065:d6b6"
  std::string fw_ver;
  std::string hca_type;         // "MT4123"
  std::string board_id;         // "MT_0000000223"
  std::string pci_address;      // "0000:3b:00.0"
  std::string vendor_id;        // "0x15b3"
  std::string device_id;        // "0x101b"
  std::string driver;           // "mlx5_core"
  std::optional<int> numa_node; // nullopt when the kernel says -1
  std::string local_cpulist;
  std::vector<std::string> netdevs; // of the PCI function, sorted
  std::string uverbs;               // "uverbs3"; empty when the device has none
  bool is_vf = false;
  std::string pf_pci_address;                // for a VF: its PF
  std::vector<std::string> vf_pci_addresses; // for a PF: its VFs
  std::vector<std::string> pcie_path;        // PCI addresses from the root port down to the device
  std::vector<Port> ports;

  std::string uverbsDevicePath() const { return uverbs.empty() ? "" : "/dev/infiniband/" + uverbs; }
  bool operator==(const RdmaDevice&) const = default;
};

struct GpuDevice {
  std::string pci_address;
  std::string device_id;
  std::optional<int> numa_node;
  std::vector<std::string> pcie_path;

  bool operator==(const GpuDevice&) const = default;
};

// One problem found while discovering; the entry named is skipped, never the scan.
struct DiscoveryWarning {
  std::string path; // what could not be read, relative to the sysfs root where possible
  std::string message;

  bool operator==(const DiscoveryWarning&) const = default;
};

struct NodeTopology {
  std::vector<RdmaDevice> devices; // sorted by name
  std::vector<GpuDevice> gpus;     // sorted by PCI address
  std::string management_netdev;   // carries the default route; empty when none
  // The addresses of the network namespace discovery ran in (the host's, for the node daemons):
  // only GIDs holding one of them are this namespace's own (docs/pod-networks.md).
  NamespaceAddresses addresses;
  std::string source; // "sysfs" or "libibverbs"
  std::vector<DiscoveryWarning> warnings;

  bool operator==(const NodeTopology&) const = default;
  const RdmaDevice* findDevice(const std::string& name) const {
    for (const auto& d : devices) {
      if (d.name == name) {
        return &d;
      }
    }
    return nullptr;
  }
};

std::string toString(PortState state);
std::string toString(LinkLayer layer);
std::string toString(GidType type); // "v1", "v2" or ""

} // namespace kube_rdma
