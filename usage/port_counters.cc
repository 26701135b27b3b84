#include "usage/port_counters.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>
#include <string_view>

#include "common/node/sysfs_attributes.h"

namespace kube_rdma {
namespace {

// What a counters/ file counts, from the kernel's sysfs ABI documentation, and how wide the
// InfiniBand PortCounters field behind it is (drivers/infiniband/core/sysfs.c).
struct KnownCounter {
  const char* file;
  const char* what;
  // 0: the data and packet counters, 64-bit where the HCA has the extended counters, else
  // 32-bit. Otherwise the width of a legacy field, which stops at its maximum.
  int saturating_bits = 0;
  uint64_t multiplier = 1;
};

constexpr KnownCounter kKnownCounters[] = {
    {"port_xmit_data", "Data bytes sent on all VLs (sysfs counts 4-octet words; exported x4).", 0,
     4},
    {"port_rcv_data", "Data bytes received on all VLs (sysfs counts 4-octet words; exported x4).",
     0, 4},
    {"port_xmit_packets", "Packets sent on all VLs, errors included."},
    {"port_rcv_packets", "Packets received on all VLs, errors included."},
    {"unicast_xmit_packets", "Unicast packets sent, errors included."},
    {"unicast_rcv_packets", "Unicast packets received, errors included."},
    {"multicast_xmit_packets", "Multicast packets sent, errors included."},
    {"multicast_rcv_packets", "Multicast packets received, errors included."},
    {"symbol_error", "Minor link errors detected on one or more physical lanes.", 16},
    {"link_error_recovery", "Link error recoveries the port training state machine completed.", 8},
    {"link_downed", "Times the link error recovery failed and the link went down.", 8},
    {"port_rcv_errors", "Received packets containing an error.", 16},
    {"port_rcv_remote_physical_errors", "Received packets marked with the EBP delimiter.", 16},
    {"port_rcv_switch_relay_errors", "Received packets a switch could not relay.", 16},
    {"port_xmit_discards", "Outbound packets discarded because the port was down or congested.",
     16},
    {"port_xmit_constraint_errors",
     "Packets not sent because of outbound raw filtering, partition or IP version checks.", 8},
    {"port_rcv_constraint_errors",
     "Received packets discarded by inbound raw filtering, partition or IP version checks.", 8},
    {"local_link_integrity_errors",
     "Times local physical errors exceeded the LocalPhyErrors threshold.", 4},
    {"excessive_buffer_overrun_errors",
     "Input buffer overruns (misconfiguration or poor signal integrity).", 4},
    {"VL15_dropped", "Incoming VL15 (subnet management) packets dropped for lack of resources.",
     16},
    {"port_xmit_wait", "Ticks during which the port had data to send but sent none.", 32},
};

std::string helpOf(const KnownCounter& known) {
  if (known.saturating_bits == 0) {
    return std::string(known.what) +
           " 64-bit where the HCA has the extended counters (PortCountersExt, e.g. mlx5), else "
           "32-bit and saturating.";
  }
  const uint64_t max = (uint64_t{1} << known.saturating_bits) - 1;
  return std::string(known.what) + " Legacy " + std::to_string(known.saturating_bits) +
         "-bit PortCounters field: stops at " + std::to_string(max) +
         " (saturates, never wraps) until the port's counters are reset.";
}

const KnownCounter* findKnown(const std::string& source, const std::string& name) {
  const auto* it = std::find_if(std::begin(kKnownCounters), std::end(kKnownCounters),
                                [&](const KnownCounter& known) { return name == known.file; });
  return source == "counters" && it != std::end(kKnownCounters) ? it : nullptr;
}

// A counter file's value; nullopt when it cannot be read or is not a number.
std::optional<uint64_t> readCounterFile(const std::string& path) {
  auto text = readAttribute(path);
  uint64_t value = 0;
  if (!text ||
      std::from_chars(text->data(), text->data() + text->size(), value).ec != std::errc()) {
    return std::nullopt;
  }
  return value;
}

} // namespace

std::vector<PortCounter> readPortCounters(const std::string& sysfs_root,
                                          const NodeTopology& topology) {
  std::vector<PortCounter> out;
  for (const auto& device : topology.devices) {
    for (const auto& port : device.ports) {
      for (const char* source : {"counters", "hw_counters"}) {
        const std::string dir = sysfs_root + "/class/infiniband/" + device.name + "/ports/" +
                                std::to_string(port.number) + "/" + source;
        for (const auto& name : listDirectory(dir)) {
          if (name == "lifespan") {
            continue;
          }
          if (const auto value = readCounterFile(dir + "/" + name)) {
            out.push_back({device.name, port.number, port.netdev, source, name, *value});
          }
        }
      }
    }
  }
  return out;
}

std::optional<uint64_t> readPortDataWords(const std::string& sysfs_root, const HcaPort& port) {
  const std::string dir = sysfs_root + "/class/infiniband/" + port.device + "/ports/" +
                          std::to_string(port.port) + "/counters/";
  const auto sent = readCounterFile(dir + "port_xmit_data");
  const auto received = readCounterFile(dir + "port_rcv_data");
  if (!sent || !received) {
    return std::nullopt;
  }
  return *sent + *received;
}

std::string portCounterMetricName(const std::string& source, const std::string& name) {
  std::string metric = source == "hw_counters" ? "kube_rdma_port_hw_" : "kube_rdma_port_";
  // counters/port_rcv_data is kube_rdma_port_rcv_data..., not kube_rdma_port_port_rcv_data...
  const std::string_view stem = source != "hw_counters" && name.starts_with("port_")
                                    ? std::string_view(name).substr(5)
                                    : std::string_view(name);
  for (const char c : stem) {
    const auto u = static_cast<unsigned char>(c);
    metric += std::isalnum(u) ? static_cast<char>(std::tolower(u)) : '_';
  }
  const KnownCounter* known = findKnown(source, name);
  if (known && known->multiplier == 4) {
    metric += "_bytes";
  }
  return metric + "_total";
}

std::vector<ScrapedFamily> portCounterFamilies(const std::vector<PortCounter>& counters) {
  std::vector<ScrapedFamily> families;
  std::map<std::string, size_t> index; // metric name -> position in families
  for (const auto& counter : counters) {
    const std::string metric = portCounterMetricName(counter.source, counter.name);
    const KnownCounter* known = findKnown(counter.source, counter.name);
    auto [it, added] = index.emplace(metric, families.size());
    if (added) {
      families.push_back({metric,
                          known ? helpOf(*known)
                                : "Port counter " + counter.source + "/" + counter.name +
                                      " of the RDMA driver, as sysfs reports it.",
                          MetricType::kCounter,
                          {}});
    }
    const double multiplier = known ? static_cast<double>(known->multiplier) : 1.0;
    families[it->second].samples.push_back({{{"device", counter.device},
                                             {"port", std::to_string(counter.port)},
                                             {"netdev", counter.netdev}},
                                            static_cast<double>(counter.value) * multiplier});
  }
  return families;
}

} // namespace kube_rdma
