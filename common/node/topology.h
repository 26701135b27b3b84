#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/node/device_model.h"
#include "common/util/result.h"

// PCIe placement of HCAs and GPUs, and the GPU<->NIC distance as NCCL classifies it
// (NCCL's src/graph/xml.cc ncclTopoGetXmlFromSys, src/graph/paths.cc).
namespace kube_rdma {

// NCCL's path types between a GPU and a NIC, closest first. NCCL has no NODE level: two host
// bridges on one NUMA node are PHB.
enum class PciPathType {
  kPix, // at most one PCIe switch between them
  kPxb, // several switches, without the host bridge
  kPhb, // through the host bridge (the CPU) of one NUMA node
  kSys, // across the SMP interconnect between NUMA nodes
};
std::string toString(PciPathType type); // "PIX", "PXB", "PHB", "SYS"

// "DDDD:BB:DD.F" in lower-case hex, as sysfs names PCI functions ("0000:3b:00.0").
bool isPciAddress(std::string_view text);

// PCI addresses from the root port down to the device, from a device path below the sysfs
// "devices" directory: "pci0000:00/0000:00:02.0/0000:10:00.0" -> {"0000:00:02.0",
// "0000:10:00.0"}. The first component must be a root complex "pciDDDD:BB" and every other one
// a PCI address "DDDD:BB:DD.F".
Result<std::vector<std::string>> parsePciePath(std::string_view devices_relative_path);

// The same from a sysfs link to a PCI function (class/infiniband/<dev>/device,
// bus/pci/devices/<bdf>): its realpath must lie below <resolved_sysfs_root>/devices/.
// resolved_sysfs_root is the realpath of the sysfs root.
// `dir_fd`, when >= 0, is the link's directory already opened: its path is then read from
// /proc/self/fd in one call instead of resolving every component.
Result<std::vector<std::string>> resolvePciePath(const std::string& resolved_sysfs_root,
                                                 const std::string& link, int dir_fd = -1);

// "pci0000:80" for a path whose root port is "0000:80:02.0"; "" for an empty path.
std::string rootComplexOf(const std::vector<std::string>& pcie_path);

// Classifies the path between two PCI functions the way NCCL does: each device's parent is two
// levels up (a switch's downstream port folds into its upstream port, root ports into the CPU);
// a shared PCI ancestor reached through one node is PIX, through more PXB; a shared root complex
// or NUMA node is PHB; anything else, and an unknown (empty) path, is SYS.
PciPathType classifyPciPath(const std::vector<std::string>& a, std::optional<int> numa_a,
                            const std::vector<std::string>& b, std::optional<int> numa_b);

PciPathType pathType(const GpuDevice& gpu, const RdmaDevice& hca);

// Names of the HCAs (SR-IOV VFs left out) at the closest path type to the GPU, in topology
// order; empty when the node has none.
std::vector<std::string> closestHcas(const GpuDevice& gpu, const NodeTopology& topology);

} // namespace kube_rdma
