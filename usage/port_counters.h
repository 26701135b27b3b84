#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/node/device_model.h"
#include "common/util/metrics.h"
#include "common/pools/nccl_settings.h"

namespace kube_rdma {

// One value of a port's sysfs counters/ or hw_counters/ directory.
struct PortCounter {
  std::string device;
  uint32_t port = 0;
  std::string netdev; // the port's netdev, empty when it has none
  std::string source; // "counters" or "hw_counters"
  std::string name;   // "port_xmit_data", "out_of_sequence", ...
  uint64_t value = 0;
};

// Reads every counter of every port of `topology`, at scrape time. A file that cannot be read or
// is not a number is skipped (some hw_counters are write-only or error on some firmware), and so
// is hw_counters/lifespan, a setting (how long the kernel caches the values), not a counter.
std::vector<PortCounter> readPortCounters(const std::string& sysfs_root,
                                          const NodeTopology& topology);

// port_xmit_data + port_rcv_data of one port (counters/, in 4-octet words; mlx5 counts RoCE
// traffic in them too): two files, not the port's whole directory; nullopt when either cannot be
// read.
std::optional<uint64_t> readPortDataWords(const std::string& sysfs_root, const HcaPort& port);

// The Prometheus name of a counter file: "kube_rdma_port_" + the file's name in lower case
// without a leading "port_" + "_total", with "hw_" before hw_counters' names (drivers choose
// those, and they could repeat a name of counters/) and "_bytes" for port_xmit_data and
// port_rcv_data, which count 4-octet words in sysfs and are exported multiplied by 4. Characters
// a metric name cannot hold become '_'.
std::string portCounterMetricName(const std::string& source, const std::string& name);

// One counter family per metric name, in order of first appearance, each sample labelled with
// device, port and netdev. The help text of the InfiniBand PortCounters says what the counter
// counts and, for the narrow legacy error counters, the width at which it stops (they saturate
// instead of wrapping, until someone resets them).
std::vector<ScrapedFamily> portCounterFamilies(const std::vector<PortCounter>& counters);

} // namespace kube_rdma
