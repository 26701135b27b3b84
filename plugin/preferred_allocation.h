#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/util/result.h"

namespace kube_rdma {

// One exclusive device ID the kubelet may hand out, with where it sits.
struct PlacedDevice {
  std::string id;
  std::optional<int> numa_node;
  std::vector<std::string> pcie_path; // root port first
};

// Chooses `size` of `available` for one container: every ID of `must_include` first, then the
// fewest NUMA nodes (the nodes already used, then those with the most free devices), and within
// a node the devices closest on the PCIe tree to those already chosen. Devices without a known
// NUMA node come last. Errors: size out of range, must_include not within available or larger
// than size, IDs not in `devices`.
Result<std::vector<std::string>>
choosePreferredAllocation(const std::vector<PlacedDevice>& devices,
                          const std::vector<std::string>& available,
                          const std::vector<std::string>& must_include, int size);

} // namespace kube_rdma
