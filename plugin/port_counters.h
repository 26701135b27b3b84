#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/device_model.h"

namespace kube_rdma {

// One value of a port's sysfs counters/ or hw_counters/ directory.
struct PortCounter {
  std::string device;
  uint32_t port = 0;
  std::string source; // "counters" or "hw_counters"
  std::string name;   // "port_xmit_data", "out_of_sequence", ...
  double value = 0;
};

// Reads every counter of every port of `topology`, at scrape time. A file that cannot be read or
// is not a number is skipped (some hw_counters are write-only or error on some firmware).
std::vector<PortCounter> readPortCounters(const std::string& sysfs_root,
                                          const NodeTopology& topology);

} // namespace kube_rdma
