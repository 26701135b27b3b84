#include "common/node/verbs_discovery.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <endian.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <iterator>
#include <map>
#include <memory>
#include <net/if.h>
#include <unistd.h>

#include "common/util/command_line.h"
#include "common/util/strings.h"
#include "common/node/sysfs_attributes.h"

namespace kube_rdma {
namespace {

struct DeviceListDeleter {
  void operator()(ibv_device** list) const { ibv_free_device_list(list); }
};
struct ContextDeleter {
  void operator()(ibv_context* ctx) const { ibv_close_device(ctx); }
};

Port queryPort(ibv_context* ctx, uint8_t number, const std::string& name,
               std::vector<DiscoveryWarning>& warnings) {
  Port port;
  port.number = number;
  ibv_port_attr attr{};
  if (const int rc = ibv_query_port(ctx, number, &attr); rc != 0) {
    warnings.push_back({name + "/ports/" + std::to_string(number),
                        std::string("ibv_query_port: ") + std::strerror(rc)});
    return port;
  }
  port.state =
      attr.state <= IBV_PORT_ACTIVE_DEFER ? static_cast<PortState>(attr.state) : PortState::kNop;
  port.phys_state = attr.phys_state;
  port.phys_state_name = physStateName(attr.phys_state);
  port.link_layer = linkLayerFromVerbs(attr.link_layer);
  port.lid = attr.lid;
  port.gid_table_len = static_cast<uint32_t>(attr.gid_tbl_len);
  if (auto rate = portRate(attr.active_width, attr.active_speed)) {
    port.rate = rate->text;
    port.rate_gbps = rate->gbps;
  }
  return port;
}

void queryGids(ibv_context* ctx, RdmaDevice& device, std::vector<DiscoveryWarning>& warnings) {
  size_t total = 0;
  for (const auto& p : device.ports) {
    total += p.gid_table_len;
  }
  if (total == 0) {
    return;
  }
  std::vector<ibv_gid_entry> entries(total);
  const ssize_t n = ibv_query_gid_table(ctx, entries.data(), entries.size(), 0);
  if (n < 0) {
    warnings.push_back({device.name + "/gids", std::string("ibv_query_gid_table: ") +
                                                   std::strerror(static_cast<int>(-n))});
    return;
  }
  for (ssize_t i = 0; i < n; ++i) {
    const ibv_gid_entry& e = entries[static_cast<size_t>(i)];
    if (e.port_num == 0 || e.port_num > device.ports.size()) {
      continue;
    }
    Gid gid;
    std::memcpy(gid.bytes.data(), e.gid.raw, gid.bytes.size());
    if (isZero(gid)) {
      continue;
    }
    GidEntry entry;
    entry.index = e.gid_index;
    entry.gid = toKernelText(gid);
    entry.type = gidTypeFromVerbs(e.gid_type);
    entry.ipv4 = ipv4Of(gid).value_or("");
    char ifname[IF_NAMESIZE] = {};
    if (e.ndev_ifindex != 0 && ::if_indextoname(e.ndev_ifindex, ifname) != nullptr) {
      entry.netdev = ifname;
    }
    device.ports[e.port_num - 1].gids.push_back(std::move(entry));
  }
  for (auto& p : device.ports) {
    std::ranges::sort(p.gids, {}, &GidEntry::index);
    const bool ib = p.link_layer == LinkLayer::kInfiniBand;
    if (!ib && !p.gids.empty() && p.gids.front().index == 0) {
      p.netdev = p.gids.front().netdev;
    }
  }
}

// Why ibv_open_device failed. Its errno is not the open's own (after a failed open rdma-core
// looks for the node under /dev/char, which a container lacks), so the node is opened again
// here, as rdma-core opens it (its path is compiled in).
std::string whyNotOpened(const ibv_device* dev, int ibv_errno) {
  const std::string node = std::string("/dev/infiniband/") + dev->dev_name;
  const int fd = ::open(node.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int open_errno = errno;
    return "open " + node + ": " + std::strerror(open_errno) +
           (open_errno == EPERM ? " (the device cgroup refuses it: a container may open only the "
                                  "device nodes it was granted, all of them when privileged)"
                                : "");
  }
  ::close(fd);
  return std::string("ibv_open_device: ") + std::strerror(ibv_errno) + " (" + node +
         " itself opens: is it the device's own node?)";
}

std::optional<RdmaDevice> queryDevice(ibv_device* dev, std::vector<DiscoveryWarning>& warnings,
                                      std::vector<DiscoveryWarning>& unusable) {
  RdmaDevice device;
  device.name = ibv_get_device_name(dev);
  std::unique_ptr<ibv_context, ContextDeleter> ctx(ibv_open_device(dev));
  if (!ctx) {
    unusable.push_back({device.name, whyNotOpened(dev, errno)});
    return std::nullopt;
  }
  ibv_device_attr attr{};
  if (const int rc = ibv_query_device(ctx.get(), &attr); rc != 0) {
    unusable.push_back({device.name, std::string("ibv_query_device: ") + std::strerror(rc)});
    return std::nullopt;
  }
  device.fw_ver = attr.fw_ver;
  device.node_guid = guidText(be64toh(attr.node_guid));
  for (uint8_t p = 1; p <= attr.phys_port_cnt; ++p) {
    device.ports.push_back(queryPort(ctx.get(), p, device.name, warnings));
  }
  queryGids(ctx.get(), device, warnings);
  return device;
}

std::string withoutTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') {
    path.pop_back();
  }
  return path;
}

// What a node whose libibverbs lists nothing has in sysfs, for the error of --discovery=verbs.
std::string whyNoVerbsDevice(const DiscoveryRoots& roots) {
  const NodeTopology sysfs = discoverFromSysfs(roots, {GidTables::kFirstOnly, {}});
  if (sysfs.devices.empty()) {
    return "sysfs at " + roots.sysfs_root + " lists none either";
  }
  std::vector<std::string> nodes;
  for (const auto& d : sysfs.devices) {
    nodes.push_back(d.name + " (" + (d.uverbs.empty() ? "no uverbs device" : d.uverbsDevicePath()) +
                    ")");
  }
  return "it lists only the devices whose node is in /dev/infiniband, and sysfs at " +
         roots.sysfs_root + " has " + joinStrings(nodes, ", ") +
         ": mount the host's /dev/infiniband at /dev/infiniband";
}

void logBackend(Logger& logger, const char* backend, DiscoveryBackend requested,
                const std::string& reason, const DiscoveryRoots& roots,
                const std::string& verbs_root) {
  logger.info("discovery backend", {{"backend", backend},
                                    {"discovery", toString(requested)},
                                    {"reason", reason},
                                    {"sysfs_root", roots.sysfs_root},
                                    {"libibverbs_sysfs_root", verbs_root}});
}

// The verbs devices completed with what only sysfs knows, matched by name. Devices sysfs lists
// but libibverbs does not (no uverbs node) are left out with a warning. GPUs, management NIC and
// the sysfs warnings come from `sysfs`; the source is "libibverbs".
NodeTopology mergeSysfsFacts(VerbsScan verbs, NodeTopology sysfs) {
  NodeTopology topo;
  topo.source = "libibverbs";
  topo.gpus = std::move(sysfs.gpus);
  topo.management_netdev = std::move(sysfs.management_netdev);
  topo.addresses = std::move(sysfs.addresses);
  topo.warnings = std::move(sysfs.warnings);
  topo.warnings.insert(topo.warnings.end(), verbs.warnings.begin(), verbs.warnings.end());
  std::map<std::string, RdmaDevice*> by_name;
  for (auto& d : sysfs.devices) {
    by_name[d.name] = &d;
  }
  for (auto& d : verbs.devices) {
    const auto it = by_name.find(d.name);
    if (it == by_name.end()) {
      topo.warnings.push_back(
          {"class/infiniband/" + d.name, "listed by libibverbs but not in sysfs: no PCI facts"});
      topo.devices.push_back(std::move(d));
      continue;
    }
    // libibverbs gives the node GUID and the ports with their GID tables, sysfs all the rest. That
    // includes the firmware, as the driver's own text: rxe has none and sysfs says "", where its
    // libibverbs provider formats the zero it gets as "0.0.0" (seen in test/softroce/).
    RdmaDevice merged = std::move(*it->second);
    merged.node_guid = std::move(d.node_guid);
    for (auto& port : d.ports) {
      for (const auto& sp : merged.ports) {
        if (sp.number == port.number && port.netdev.empty()) {
          port.netdev = sp.netdev; // IPoIB matching and the RoCE fallback are sysfs facts
        }
      }
    }
    merged.ports = std::move(d.ports);
    by_name.erase(it);
    topo.devices.push_back(std::move(merged));
  }
  for (const auto& [name, device] : by_name) {
    topo.warnings.push_back({"class/infiniband/" + name,
                             "in sysfs but not listed by libibverbs (no uverbs device node?)"});
  }
  std::ranges::sort(topo.devices, naturalLess, &RdmaDevice::name);
  return topo;
}

} // namespace

std::string LibibverbsSource::sysfsRoot() const {
  return libibverbsSysfsRoot(std::getenv("SYSFS_PATH"));
}

Result<VerbsScan> LibibverbsSource::scan() {
  int n = 0;
  errno = 0;
  std::unique_ptr<ibv_device*, DeviceListDeleter> list(ibv_get_device_list(&n));
  if (!list) {
    return makeError(std::string("ibv_get_device_list failed: ") + std::strerror(errno));
  }
  VerbsScan scan;
  for (int i = 0; i < n; ++i) {
    if (auto device = queryDevice(list.get()[i], scan.warnings, scan.unusable)) {
      scan.devices.push_back(std::move(*device));
    }
  }
  return scan;
}

Result<DiscoveryBackend> parseDiscoveryBackend(std::string_view text) {
  for (const auto backend :
       {DiscoveryBackend::kAuto, DiscoveryBackend::kSysfs, DiscoveryBackend::kVerbs}) {
    if (text == toString(backend)) {
      return backend;
    }
  }
  return makeError("'" + std::string(text) + "' is not one of sysfs, verbs, auto");
}

std::string toString(DiscoveryBackend backend) {
  static constexpr const char* kNames[] = {"auto", "sysfs", "verbs"};
  static_assert(std::size(kNames) == static_cast<size_t>(DiscoveryBackend::kVerbs) + 1);
  return kNames[static_cast<size_t>(backend)];
}

std::string libibverbsSysfsRoot(const char* sysfs_path_env) {
  return sysfs_path_env == nullptr ? "/sys" : withoutTrailingSlashes(sysfs_path_env);
}

Result<NodeTopology> discoverNode(const DiscoveryRoots& roots, DiscoveryBackend backend,
                                  Logger& logger, VerbsDeviceSource& source,
                                  const GidScan& sysfs_gids) {
  const std::string verbs_root = withoutTrailingSlashes(source.sysfsRoot());
  if (backend == DiscoveryBackend::kSysfs) {
    logBackend(logger, "sysfs", backend, "asked for", roots, verbs_root);
    return discoverFromSysfs(roots, sysfs_gids);
  }
  const bool verbs = backend == DiscoveryBackend::kVerbs;
  if (withoutTrailingSlashes(roots.sysfs_root) != verbs_root) {
    if (verbs) {
      return makeError("--discovery=verbs: libibverbs reads sysfs at " + verbs_root +
                       " but --sysfs-root is " + roots.sysfs_root +
                       ": set SYSFS_PATH=" + roots.sysfs_root + " in the environment");
    }
    logBackend(logger, "sysfs", backend,
               "the sysfs root is not the one libibverbs reads (SYSFS_PATH, default /sys)", roots,
               verbs_root);
    return discoverFromSysfs(roots, sysfs_gids);
  }
  auto scan = source.scan();
  if (verbs) {
    if (!scan) {
      return makeError("--discovery=verbs: " + scan.error().message);
    }
    if (!scan->unusable.empty()) {
      std::vector<std::string> why;
      for (const auto& u : scan->unusable) {
        why.push_back(u.path + ": " + u.message);
      }
      return makeError("--discovery=verbs: libibverbs cannot open " + joinStrings(why, "; "));
    }
    if (scan->devices.empty()) {
      return makeError("--discovery=verbs: libibverbs lists no RDMA device; " +
                       whyNoVerbsDevice(roots));
    }
  } else if (!scan || scan->devices.empty()) {
    logBackend(logger, "sysfs", backend,
               scan ? "libibverbs lists no devices" : scan.error().message, roots, verbs_root);
    return discoverFromSysfs(roots, sysfs_gids);
  }
  logBackend(logger, "libibverbs", backend,
             verbs ? "asked for" : "it reads --sysfs-root and lists devices", roots, verbs_root);
  scan->warnings.insert(scan->warnings.end(), scan->unusable.begin(), scan->unusable.end());
  return mergeSysfsFacts(std::move(*scan), discoverFromSysfs(roots, {GidTables::kFirstOnly, {}}));
}

Result<NodeTopology> discoverNode(const DiscoveryRoots& roots, DiscoveryBackend backend,
                                  Logger& logger, const GidScan& sysfs_gids) {
  LibibverbsSource source;
  return discoverNode(roots, backend, logger, source, sysfs_gids);
}

std::optional<PortRate> portRate(uint8_t active_width, uint8_t active_speed) {
  struct Width {
    uint8_t code;
    int lanes;
  };
  // active_width (IB_WIDTH_1X, 4X, 8X, 12X, 2X) to lanes.
  static constexpr Width kWidths[] = {{1, 1}, {2, 4}, {4, 8}, {8, 12}, {16, 2}};
  // Per-lane rate in tenths of Gb/s and the kernel's name (ib_rate_to_mbps / sysfs rate_show).
  struct Speed {
    uint8_t code;
    int tenths;
    const char* name;
  };
  static constexpr Speed kSpeeds[] = {{1, 25, " SDR"},    {2, 50, " DDR"},    {4, 100, " QDR"},
                                      {8, 100, " FDR10"}, {16, 140, " FDR"},  {32, 250, " EDR"},
                                      {64, 500, " HDR"},  {128, 1000, " NDR"}};
  const auto* width = std::find_if(std::begin(kWidths), std::end(kWidths),
                                   [&](const Width& w) { return w.code == active_width; });
  const auto* speed = std::find_if(std::begin(kSpeeds), std::end(kSpeeds),
                                   [&](const Speed& s) { return s.code == active_speed; });
  if (width == std::end(kWidths) || speed == std::end(kSpeeds)) {
    return std::nullopt;
  }
  const int total = speed->tenths * width->lanes;
  PortRate rate;
  rate.gbps = static_cast<uint32_t>(total / 10);
  rate.text = std::to_string(total / 10) + (total % 10 ? ".5" : "") + " Gb/sec (" +
              std::to_string(width->lanes) + "X" + speed->name + ")";
  return rate;
}

std::string physStateName(int phys_state) {
  static constexpr const char* kNames[] = {
      "<unknown>",         "Sleep",   "Polling", "Disabled", "PortConfigurationTraining", "LinkUp",
      "LinkErrorRecovery", "Phy Test"};
  return phys_state >= 0 && phys_state < 8 ? kNames[phys_state] : "<unknown>";
}

GidType gidTypeFromVerbs(uint32_t ibv_gid_type) {
  switch (ibv_gid_type) {
  case IBV_GID_TYPE_IB: // sysfs prints "IB/RoCE v1" for both
  case IBV_GID_TYPE_ROCE_V1:
    return GidType::kRoceV1;
  case IBV_GID_TYPE_ROCE_V2:
    return GidType::kRoceV2;
  default:
    return GidType::kUnknown;
  }
}

LinkLayer linkLayerFromVerbs(uint8_t ibv_link_layer) {
  switch (ibv_link_layer) {
  case IBV_LINK_LAYER_INFINIBAND:
    return LinkLayer::kInfiniBand;
  case IBV_LINK_LAYER_ETHERNET:
    return LinkLayer::kEthernet;
  default:
    return LinkLayer::kUnknown;
  }
}

std::string guidText(uint64_t guid) {
  char buf[20];
  std::snprintf(buf, sizeof(buf), "%04x:%04x:%04x:%04x", static_cast<unsigned>(guid >> 48),
                static_cast<unsigned>((guid >> 32) & 0xffff),
                static_cast<unsigned>((guid >> 16) & 0xffff), static_cast<unsigned>(guid & 0xffff));
  return buf;
}

void addDiscoveryOption(CLI::App& app, DiscoveryBackend& backend) {
  auto store = [&backend](const std::string& text) -> std::string {
    auto parsed = parseDiscoveryBackend(text);
    if (!parsed) {
      return parsed.error().message;
    }
    backend = *parsed;
    return "";
  };
  addCheckedOption(app, "--discovery", std::move(store),
                   "sysfs: read sysfs only; verbs: libibverbs (sysfs at $SYSFS_PATH, nodes in "
                   "/dev/infiniband; a container must be privileged) or fail; auto (default): "
                   "libibverbs when it reads --sysfs-root and lists a device, else sysfs")
      ->type_name("BACKEND");
}

} // namespace kube_rdma
